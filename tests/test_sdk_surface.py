"""The `cog` package a model imports in cogserve's worker has Cog's public API, name by name.

Both surfaces are dumped by `tests/sdk_surface.py` (each public name of `cog`,
`cog.types`, `cog.input`, `cog.model`, `cog.predictor`: kind, call signature with
defaults and annotations, a class's bases, public members and dataclass fields): once
with the reference wheel installed from PyPI (`reference.venv()`: cog and coglet at the
version `cogserve.cog.__version__` names, built once under `.cache/`), once with
cogserve's alias. Comparing against the wheel itself rather than a committed snapshot
means there is nothing to regenerate: when cogserve moves to a newer Cog release (its
`__version__` and `tests/reference.py`'s pins), this test lists every difference at once.
Not in tests/unit: it runs two interpreters (and, the first time, installs the wheel).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest
import reference

import cogserve.cog

DUMPER = pathlib.Path(__file__).resolve().parent / "sdk_surface.py"

# cogserve's own names in `cog`, absent from Cog's: name -> why
ADDITIONS = {
    "cog": {"Tensor": "n-dimensional inputs and outputs for the V2 protocol (docs/v2.md)",
            "batch": "dynamic batching: run() takes a list per input (README, Dynamic batching)"},
}


def dump(python: str, *args: str) -> dict[str, Any]:
    done = subprocess.run([python, str(DUMPER), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def surfaces() -> tuple[dict[str, Any], dict[str, Any]]:
    assert f"cog=={cogserve.cog.__version__}" in reference.PACKAGES
    try:
        venv = reference.venv()
    except reference.Unreachable as exc:
        pytest.skip(f"the package index is unreachable, so the reference cannot be "
                    f"installed: {str(exc).splitlines()[-1]}")
    return dump(str(venv / "bin" / "python")), dump(sys.executable, "--cogserve")


def differences(theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Each name whose description differs, with the parts that differ."""
    found = []
    for module, names in theirs.items():
        mine = ours.get(module, {})
        for name in sorted(set(names) | set(mine)):
            a, b = names.get(name), mine.get(name)
            if a == b or (a is None and name in ADDITIONS.get(module, {})):
                continue
            if a is None or b is None:
                found.append(f"{module}.{name}: {'only in cogserve' if a is None else 'missing'}")
                continue
            for key in sorted(set(a) | set(b)):
                if a.get(key) != b.get(key):
                    found.append(f"{module}.{name} {key}: Cog {a.get(key)} / cogserve "
                                 f"{b.get(key)}")
    return found


def test_every_public_name_has_cogs_signature_and_members(surfaces):
    theirs, ours = surfaces
    assert sum(len(names) for names in theirs.values()) >= 38  # all five modules were read
    assert differences(theirs, ours) == []


def test_the_additions_are_cogserves_alone(surfaces):
    theirs, ours = surfaces
    for module, names in ADDITIONS.items():
        for name in names:
            assert name not in theirs[module] and name in ours[module], (module, name)


def test_the_comparison_sees_a_changed_signature(surfaces):
    """The comparison itself can fail: one default changed is reported."""
    theirs, ours = surfaces
    changed = json.loads(json.dumps(ours))
    changed["cog.input"]["Input"]["signature"]["parameters"][0][2] = "Ellipsis"
    assert differences(theirs, changed) == [
        f"cog.input.Input signature: Cog {theirs['cog.input']['Input']['signature']} / "
        f"cogserve {changed['cog.input']['Input']['signature']}"]
