"""Install the bundle offline into the GPU scenario's venvs.

Each system gets a venv of its own under `bench/.cache/gpu-venvs/` made with
`--system-site-packages` (and, where this Python is a venv itself, a .pth file naming its
site-packages), so the machine's torch, torchvision, numpy and pillow are the ones every
system runs, and `pip install --no-index --find-links` fills it from the
bundle's wheels (nothing is fetched). A venv is reused while the bundle it was made from
is unchanged (its manifest is copied in as a marker).
"""

from __future__ import annotations

import pathlib
import shutil
import site
import subprocess
import sys

from bench import envs

VENVS = envs.CACHE / "gpu-venvs"
PACKAGES = {
    "cogserve": ["cogserve[gpu]"],
    "litserve": ["litserve==0.2.19", "python-multipart"],  # forms: see bundle.GROUPS
    "reference": ["cog==0.23.1", "coglet==0.23.1"],
}
SMOKE_EXTRA = ["numpy", "pillow"]  # the GPU machine has its own


class InstallError(RuntimeError):
    pass


def install(bundle: pathlib.Path, *, smoke: bool, python: str = sys.executable
            ) -> dict[str, pathlib.Path]:
    """The venvs, made (or found made) from `bundle`; name -> venv folder."""
    manifest = bundle / "manifest.json"
    if not manifest.exists():
        raise InstallError(f"no bundle at {bundle}: make it where PyPI can be reached with "
                           f"`python3 -m bench.gpu.bundle{' --smoke' if smoke else ''}`")
    wanted = manifest.read_text()
    # pip run from its wheel (a wheel is a zip Python can import from): the venvs need
    # no ensurepip, which a Debian or Ubuntu Python without python3-venv lacks
    pip = next((bundle / "wheels").glob("pip-*.whl"), None)
    if pip is None:
        raise InstallError(f"{bundle} has no pip wheel: make it again")
    root = VENVS / ("smoke" if smoke else "gpu")
    made: dict[str, pathlib.Path] = {}
    for name, packages in PACKAGES.items():
        path = root / name
        marker = path / ".bench-bundle"
        made[name] = path
        if marker.exists() and marker.read_text() == wanted:
            continue
        print(f"[gpu] installing {name} offline into {path} ...", file=sys.stderr, flush=True)
        shutil.rmtree(path, ignore_errors=True)
        _run([python, "-m", "venv", "--system-site-packages", "--without-pip", str(path)])
        _see_outer_venv(path)
        _run([str(path / "bin" / "python"), str(pip / "pip"), "install", "-q",
              "--disable-pip-version-check", "--no-index", "--find-links",
              str(bundle / "wheels"), *packages, *(SMOKE_EXTRA if smoke else [])])
        marker.write_text(wanted)
    return made


def _see_outer_venv(path: pathlib.Path) -> None:
    """Where this Python is itself a venv (torch installed there, not in the system's
    site-packages), the new venv sees its packages too, after its own: a .pth file."""
    if sys.prefix == sys.base_prefix:
        return
    inner = next(path.glob("lib/python3*/site-packages"))
    (inner / "_bench_outer_venv.pth").write_text("\n".join(site.getsitepackages()) + "\n")


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise InstallError(f"{' '.join(argv[:8])} ... failed ({done.returncode}):\n"
                           f"{done.stdout[-1500:]}{done.stderr[-1500:]}")
