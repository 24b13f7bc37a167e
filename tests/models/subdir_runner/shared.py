def greet(name: str) -> str:
    return f"hello {name}"
