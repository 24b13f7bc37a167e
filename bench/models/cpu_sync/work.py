"""The CPU-bound work of bench scenario 9, shared by the Cog model and the LitServe app.

Pure Python, so it holds the GIL: one process can do one at a time, and only more
processes (--workers, LitServe's workers_per_device) run more at once. 440,000
iterations take about 20 ms on an idle core of the bench machine.
"""

ITERATIONS = 440_000


def work(n: int = ITERATIONS) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total
