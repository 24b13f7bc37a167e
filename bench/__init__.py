"""The benchmark: `bench/run` (see bench/main.py) and the models it serves."""
