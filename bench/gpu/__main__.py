"""`python3 -m bench.gpu` (or `bench/gpu/run`): install the bundle offline, then measure.

    bench/gpu/run --out DIR                  # on the GPU machine (no network)
    bench/gpu/run --smoke --out DIR          # here: the same flow on a CPU, stand-in model

The install runs with this Python (3.12 on the GPU machine, whose torch the venvs see);
the measuring runs with the cogserve venv's Python, which has nvidia-ml-py. `--smoke`
makes its bundle first when there is none, or when the one there holds another commit
than the checkout's (that needs PyPI).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

from bench import envs
from bench.gpu import bundle, install


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true",
                        help="a CPU run of the same flow with the numpy stand-in model")
    parser.add_argument("--out", type=pathlib.Path, default=None,
                        help="results folder (default: $OUT, else bench/.cache/gpu-out)")
    parser.add_argument("--bundle", type=pathlib.Path, default=None,
                        help="the wheels' folder (default bench/.cache/gpu-bundle[-smoke])")
    parser.add_argument("--seconds", type=float, default=None,
                        help="one point's wrk run (default 4; smoke 1)")
    parser.add_argument("--warmup", type=float, default=None,
                        help="the warm-up run per server (default 2; smoke 1)")
    parser.add_argument("--workers", type=int, nargs="*", default=None,
                        help="worker counts to run (default 1 2 4, the multipart "
                             "uploads 1 4; smoke 1 2)")
    parser.add_argument("--systems", nargs="*", default=None,
                        help="only the systems whose names or bodies contain these "
                             "words (batch, litserve, 'no @batch', reference; multipart, "
                             "'data URL')")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds the measuring may take: no server starts past it "
                             "(default 480, so one 10-minute call holds the install and the run)")
    args = parser.parse_args()
    out = args.out or pathlib.Path(os.environ.get("OUT") or envs.CACHE / "gpu-out")
    out = out.resolve()
    source = args.bundle or (bundle.SMOKE if args.smoke else bundle.DEFAULT)
    if args.smoke and bundle.made_at(source) != bundle.tree_commit():
        # here the bundle can be made again: a smoke run checks the tree as it is
        bundle.build(source, f"{sys.version_info.major}.{sys.version_info.minor}", True)
    try:
        venvs = install.install(source, smoke=args.smoke)
    except install.InstallError as exc:
        raise SystemExit(f"[gpu] {exc}") from None
    # the bundle's cogserve is the one measured (a copy of the tree may lack git or .git)
    commit = bundle.made_at(source) or "?"
    print(f"[gpu] measuring cogserve at {commit} (the bundle's)", file=sys.stderr, flush=True)
    argv = [str(venvs["cogserve"] / "bin" / "python"), "-m", "bench.gpu.measure",
            "--out", str(out), "--venvs", str(venvs["cogserve"].parent),
            "--wrk", str(source / "wrk" / "wrk.sh"), "--commit", commit]
    if args.smoke:
        argv.append("--smoke")
    for flag in ("seconds", "warmup", "budget"):
        if getattr(args, flag) is not None:
            argv += [f"--{flag}", str(getattr(args, flag))]
    if args.workers:
        argv += ["--workers", *map(str, args.workers)]
    if args.systems:
        argv += ["--systems", *args.systems]
    os.chdir(envs.REPO)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
