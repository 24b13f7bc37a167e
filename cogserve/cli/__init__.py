"""The `cogserve` command: serve, predict|run, train, schema and the deploy commands
(`main.py`), what it reads (`inputs.py`) and what it prints (`output.py`)."""
