"""Write the GPU scenario's bundle: every wheel the run installs, and wrk.

    python3 -m bench.gpu.bundle            # for the GPU machine: CPython 3.12, x86_64
    python3 -m bench.gpu.bundle --smoke    # for this machine's Python (the smoke run)

Run where PyPI can be reached. The GPU machine brings torch, torchvision, numpy, pillow,
httpx and uvloop itself, so the GPU bundle leaves numpy and pillow out (the others come
in as cogserve's and LitServe's own dependencies, and pip keeps the system's copies where
they satisfy them); the smoke bundle has them, for a machine that has none.
wrk is copied from this machine (Debian's package, installed if missing) with the shared
libraries it links that are not glibc's; its wrapper `wrk.sh` uses them only where the
GPU machine lacks its own.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import time

from bench import envs

DEFAULT = envs.CACHE / "gpu-bundle"
SMOKE = envs.CACHE / "gpu-bundle-smoke"
# one resolution each, as each lands in a venv of its own (their pins may differ)
GROUPS = {
    "cogserve": ["nvidia-ml-py>=12"],  # plus cogserve's own wheel, built from this checkout
    # LitServe parses a form with starlette, which needs python-multipart (not among
    # LitServe's own dependencies): the multipart-upload points
    "litserve": ["litserve==0.2.19", "python-multipart>=0.0.18"],
    "reference": ["cog==0.23.1", "coglet==0.23.1"],
    # the venvs are made without pip (a Debian Python may lack ensurepip): pip runs from
    # its wheel
    "pip": ["pip>=24"],
}
SMOKE_EXTRA = ["numpy>=1.24", "pillow>=10"]  # the GPU machine has its own
# manylinux_2_28: glibc 2.28 and up (pip also takes the older manylinux tags)
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux2014_x86_64"]
WRAPPER = """#!/bin/sh
# wrk as bundled: its own copies of LuaJIT and OpenSSL only where this machine lacks them
here=$(cd "$(dirname "$0")" && pwd)
if ldd "$here/bin/wrk" 2>/dev/null | grep -q "not found"; then
    export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
exec "$here/bin/wrk" "$@"
"""


def build(dest: pathlib.Path, python_version: str, smoke: bool) -> dict[str, object]:
    wheels = dest / "wheels"
    shutil.rmtree(dest, ignore_errors=True)
    wheels.mkdir(parents=True)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
          str(envs.REPO)])
    cogserve = next(wheels.glob("cogserve-*.whl"))
    target = ["--only-binary=:all:", "--python-version", python_version,
              "--implementation", "cp"] + [x for p in PLATFORMS for x in ("--platform", p)]
    for name, wanted in GROUPS.items():
        extra = [str(cogserve)] if name == "cogserve" else []
        if smoke:
            extra += SMOKE_EXTRA
        print(f"[bundle] {name}: {' '.join(wanted)}", file=sys.stderr, flush=True)
        _run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
              "-d", str(wheels), *target, *extra, *wanted])
    _copy_wrk(dest / "wrk")
    manifest = {"python": python_version, "smoke": smoke, "cogserve_commit": tree_commit(),
                "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "wheels": sorted(p.name for p in wheels.iterdir()),
                "bytes": sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())}
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def _copy_wrk(dest: pathlib.Path) -> None:
    binary = pathlib.Path(envs.wrk()).resolve()
    (dest / "bin").mkdir(parents=True)
    (dest / "lib").mkdir()
    shutil.copy2(binary, dest / "bin" / "wrk")
    linked = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
    for line in linked.splitlines():
        parts = line.split("=>")
        if len(parts) != 2 or not parts[1].strip().startswith("/"):
            continue
        name, path = parts[0].strip(), pathlib.Path(parts[1].split()[0])
        # glibc's own libraries must be the machine's
        if not name.startswith(("libc.", "libm.", "libpthread.", "libdl.", "librt.",
                                "libgcc_s.", "ld-linux")):
            shutil.copy2(path.resolve(), dest / "lib" / name)
    wrapper = dest / "wrk.sh"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)


def tree_commit() -> str:
    """The checkout's commit, as a bundle's manifest names the cogserve it holds."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=envs.REPO, capture_output=True,
                            text=True).stdout.strip()
    if subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=envs.REPO,
                      capture_output=True, text=True).stdout.strip():
        commit += " with uncommitted changes"
    return commit


def made_at(dest: pathlib.Path) -> str | None:
    """The commit of the cogserve in the bundle at `dest`; None when there is none."""
    manifest = dest / "manifest.json"
    if not manifest.exists():
        return None
    return str(json.loads(manifest.read_text())["cogserve_commit"])


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:6])} ... failed ({done.returncode}):\n"
                         f"{done.stdout[-1500:]}{done.stderr[-1500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true",
                        help="for this machine's Python, with numpy and pillow")
    parser.add_argument("--python-version", default=None,
                        help="target CPython (default 3.12; --smoke: this one's)")
    parser.add_argument("--dest", type=pathlib.Path, default=None)
    args = parser.parse_args()
    version = args.python_version or (f"{sys.version_info.major}.{sys.version_info.minor}"
                                      if args.smoke else "3.12")
    dest = args.dest or (SMOKE if args.smoke else DEFAULT)
    manifest = build(dest, version, args.smoke)
    wheels = len(list((dest / "wheels").iterdir()))
    print(f"[bundle] {dest}: {wheels} wheels + wrk, {manifest['bytes']} bytes, "
          f"for CPython {version}")


if __name__ == "__main__":
    main()
