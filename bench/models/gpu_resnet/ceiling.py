"""The model's own rate, no server: images/s at batch 1 and 32 in one process, with the
JPEG decode in the loop and without it (images decoded once, before timing); with
`--procs N`, batch 32 with the decode in N processes at once (the cores N workers use).

`python ceiling.py IMAGE.jpg --seconds S [--procs N]` prints one JSON line. A batch's result is
copied to the host (`top5` ends in `.cpu()`), so each timed call includes the GPU's work.
"""

import argparse
import json
import multiprocessing
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from net import Classifier, decode  # noqa: E402


def rate(step, batch: int, seconds: float) -> float:  # noqa: ANN001
    for _ in range(3):  # warm-up: cuDNN picks its algorithms for this shape
        step(batch)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step(batch)
        done += batch
    return done / (time.perf_counter() - start)


def _one_of_many(data: bytes, seconds: float, barrier, results) -> None:  # noqa: ANN001
    """One of --procs processes: batch 32 with the decode, started with the others."""
    net = Classifier()
    step = lambda n: net.top5([decode(data) for _ in range(n)])  # noqa: E731
    for _ in range(3):
        step(32)
    barrier.wait()
    results.put(rate(step, 32, seconds))


def parallel(data: bytes, seconds: float, procs: int) -> float:
    """images/s of `procs` processes at once (spawned: a forked CUDA context breaks)."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(procs), ctx.Queue()
    workers = [ctx.Process(target=_one_of_many, args=(data, seconds, barrier, results))
               for _ in range(procs)]
    for w in workers:
        w.start()
    total = sum(results.get(timeout=600) for _ in workers)
    for w in workers:
        w.join()
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("image", type=pathlib.Path)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--procs", type=int, default=0,
                        help="also batch 32 with the decode in this many processes at once")
    args = parser.parse_args()
    data = args.image.read_bytes()
    net = Classifier()
    decoded = decode(data)
    # the answer every server's is compared with
    figures: dict[str, object] = {"device": net.device, "top5": net.top5([decoded])[0]}
    for batch in (1, 32):
        figures[f"batch {batch}, decode included"] = rate(
            lambda n: net.top5([decode(data) for _ in range(n)]), batch, args.seconds)
        figures[f"batch {batch}, decode excluded"] = rate(
            lambda n: net.top5([decoded] * n), batch, args.seconds)
    start, count = time.perf_counter(), 0
    while time.perf_counter() - start < min(1.0, args.seconds):
        decode(data)
        count += 1
    figures["decode alone, ms per image"] = (time.perf_counter() - start) / count * 1e3
    if args.procs > 1:
        figures[f"batch 32, decode included, {args.procs} processes"] = parallel(
            data, args.seconds, args.procs)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
