"""Install what the bench compares into venvs of its own under bench/.cache/.

Each venv is built once and reused while its package list is unchanged (a marker file
records the list it was built from), so a second `bench/run` starts measuring at once.
cogserve is installed from this checkout as a user installs it (a copy, not an editable
install, whose import hook costs each process ~10 ms at start: cold starts would not
compare fairly with the reference and the baseline), and reinstalled once per bench
process, so the bench always measures the working tree; the floor app runs in the same
venv, on the same uvicorn, httptools and uvloop as cogserve. `baseline(REF)` installs
cogserve as it was at a git ref (from `git archive`, also a copy) into a venv named by
the commit, so `bench/run --baseline REF` measures the working tree against that commit
with nothing else different.
"""

from __future__ import annotations

import hashlib
import pathlib
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass

BENCH = pathlib.Path(__file__).resolve().parent
REPO = BENCH.parent
CACHE = BENCH / ".cache"
VENVS = CACHE / "venvs"

PACKAGES: dict[str, list[str]] = {
    # numpy: the V2 sum model (bench/models/v2_sum) needs it
    # pillow: the JPEG decode of the CPU proxy of the GPU path (bench/models/image_decode)
    "cogserve": [str(REPO), "py-spy>=0.3.14", "numpy>=1.24", "pillow>=10"],
    # numpy: the MLP of the batching scenario (bench/models/mlp)
    "reference": ["cog==0.23.1", "coglet==0.23.1", "numpy>=1.24"],
    # uvloop 0.22+ breaks MLServer 1.7.1's worker pool (get_event_loop() in a fresh process)
    "mlserver": ["mlserver==1.7.1", "uvloop<0.22"],
    # python-multipart: starlette's form parser, which LitServe's multipart uploads need (12e)
    "litserve": ["litserve==0.2.19", "numpy>=1.24", "pillow>=10", "python-multipart>=0.0.18"],
}


class SetupError(RuntimeError):
    pass


_tree_installed = False  # this process put the working tree into the cogserve venv


def venv(name: str) -> pathlib.Path:
    """The venv for `name`, created and filled on first use."""
    path = VENVS / name
    marker = path / ".bench-installed"
    wanted = "\n".join(PACKAGES[name])
    if name == "cogserve":  # a new dependency of the tree: install everything again
        wanted += "\n" + hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()
    if marker.exists() and marker.read_text() == wanted:
        if name == "cogserve":
            _install_tree(path)
        return path
    print(f"[bench] installing {name} into {path} ...", file=sys.stderr, flush=True)
    if not (path / "bin" / "python").exists():
        _run([sys.executable, "-m", "venv", str(path)])
    _run([str(path / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
          *PACKAGES[name]])
    marker.write_text(wanted)
    global _tree_installed
    _tree_installed = name == "cogserve" or _tree_installed
    return path


def _install_tree(path: pathlib.Path) -> None:
    """The working tree as it is now, over the copy an earlier run installed."""
    global _tree_installed
    if _tree_installed:
        return
    _run([str(path / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
          "--no-deps", "--force-reinstall", str(REPO)])
    _tree_installed = True


@dataclass(frozen=True)
class Baseline:
    """cogserve at a git ref, installed: what `bench/run --baseline REF` runs beside it."""

    ref: str        # as the user gave it
    commit: str     # its full sha
    venv: pathlib.Path

    @property
    def label(self) -> str:
        short = self.commit[:7]
        return f"cogserve at {short}" if self.ref.startswith(short) else \
            f"cogserve at {self.ref} ({short})"


def baseline(ref: str) -> Baseline:
    """Install cogserve at `ref` (once per commit) into bench/.cache/venvs/baseline-SHA."""
    done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                          capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise SetupError(f"--baseline {ref}: not a commit in {REPO}")
    commit = done.stdout.strip()
    path = VENVS / f"baseline-{commit[:12]}"
    marker = path / ".bench-installed"
    # numpy and pillow: the V2 sum and image models need them, as in the cogserve venv
    wanted = f"cogserve@{commit}\nnumpy>=1.24\npillow>=10"
    if marker.exists() and marker.read_text() == wanted:
        return Baseline(ref, commit, path)
    print(f"[bench] installing cogserve at {ref} ({commit[:12]}) into {path} ...",
          file=sys.stderr, flush=True)
    source = CACHE / "baselines" / commit[:12]
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    archive = subprocess.Popen(["git", "archive", "--format=tar", commit], cwd=REPO,
                               stdout=subprocess.PIPE)
    assert archive.stdout is not None
    with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
        tar.extractall(source, filter="data")
    if archive.wait() != 0:
        raise SetupError(f"git archive {commit} failed")
    if not (path / "bin" / "python").exists():
        _run([sys.executable, "-m", "venv", str(path)])
    _run([str(path / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
          str(source), "numpy>=1.24", "pillow>=10"])
    shutil.rmtree(source, ignore_errors=True)  # installed as a copy: the tree is not needed
    marker.write_text(wanted)
    return Baseline(ref, commit, path)


def wrk() -> str:
    """The wrk binary, installed from the Debian archive if missing."""
    found = shutil.which("wrk")
    if found:
        return found
    print("[bench] installing wrk with apt-get ...", file=sys.stderr, flush=True)
    try:
        _run(["apt-get", "install", "-y", "-q", "wrk"])
    except SetupError:
        _run(["apt-get", "update", "-q"])
        _run(["apt-get", "install", "-y", "-q", "wrk"])
    found = shutil.which("wrk")
    if not found:
        raise SetupError("wrk is not on PATH after apt-get install wrk")
    return found


def _run(argv: list[str]) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True)
    except FileNotFoundError as exc:
        raise SetupError(f"{argv[0]} not found: {exc}") from None
    if done.returncode != 0:
        raise SetupError(f"{' '.join(argv)} failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
