"""The model's own rate in one process, no server: images/s at batch 1 and 32, with the
JPEG decode in the loop and without it (images decoded once, before timing).

`python ceiling.py IMAGE.jpg --seconds S` prints one JSON line. A batch's result is
copied to the host (`top5` ends in `.cpu()`), so each timed call includes the GPU's work.
"""

import argparse
import json
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("image", type=pathlib.Path)
    parser.add_argument("--seconds", type=float, default=3.0)
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
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
