from cog import BaseModel


class Result(BaseModel):
    text: str
    score: float
    tags: list[str]
