"""Per-model environments (cogserve/envs): real packages from PyPI, installed by uv.

Environments go to the session's COGSERVE_ENV_DIR (conftest), built once per session and
shared by the tests here; uv keeps its own download cache, so a rerun downloads nothing.
"""

from __future__ import annotations

import json
import os
import pathlib

from cli_harness import cogserve
from harness import MODELS

ENVS = MODELS / "envs"


def env_root() -> pathlib.Path:
    return pathlib.Path(os.environ["COGSERVE_ENV_DIR"])


def ready_envs() -> list[str]:
    root = env_root()
    return sorted(p.name for p in root.iterdir() if (p / "cogserve-env.json").is_file()) \
        if root.is_dir() else []


def leftovers() -> list[str]:
    """Anything in the store that is neither a ready environment nor the cogserve wheel."""
    root = env_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir()
                  if p.name != "wheels" and not (p / "cogserve-env.json").is_file())


def test_env_command_builds_once_prints_the_path_and_reuses_it() -> None:
    first = cogserve("env", ENVS / "pillow10", timeout=300)
    assert first.returncode == 0, first.stderr
    path = pathlib.Path(first.stdout.strip())
    assert path.parent == env_root()
    info = json.loads((path / "cogserve-env.json").read_text())
    assert info["model"] == str(ENVS / "pillow10")
    assert (path / "bin" / "python").exists()
    again = cogserve("env", ENVS / "pillow10")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == str(path)
    assert "resolving" not in again.stderr  # nothing was built the second time
    assert leftovers() == []


def test_env_rebuild_remove_list_and_prune() -> None:
    built = cogserve("env", ENVS / "pillow11", timeout=300)
    assert built.returncode == 0, built.stderr
    path = pathlib.Path(built.stdout.strip())
    marker = path / "cogserve-env.json"
    before = marker.read_text()
    rebuilt = cogserve("env", ENVS / "pillow11", "--rebuild", timeout=300)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "resolving" in rebuilt.stderr
    assert rebuilt.stdout.strip() == str(path)
    assert json.loads(marker.read_text())["created_at"] > json.loads(before)["created_at"]
    listed = cogserve("env", "--list")
    assert f"{path}\t{ENVS / 'pillow11'}" in listed.stdout
    os.utime(marker, (0, 0))  # unused since 1970: --prune takes it
    pruned = cogserve("env", "--prune", "--days", "1")
    assert pruned.returncode == 0, pruned.stderr
    assert not path.exists()
    cogserve("env", ENVS / "pillow11", timeout=300)
    assert path.exists()
    removed = cogserve("env", ENVS / "pillow11", "--remove")
    assert removed.returncode == 0, removed.stderr
    assert not path.exists() and leftovers() == []


def test_env_for_a_package_that_does_not_exist_fails_with_uv_message_and_leaves_nothing() -> None:
    result = cogserve("env", ENVS / "missing_pkg", timeout=300)
    assert result.returncode == 1
    assert "cogserve-test-no-such-package-8e1f" in result.stderr
    assert "No solution found" in result.stderr  # uv's own words
    assert result.stdout == ""
    assert leftovers() == []
