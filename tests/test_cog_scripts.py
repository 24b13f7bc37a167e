"""Cog's own integration scripts, run against cogserve from a clean environment.

`tests/cog_scripts/` holds the scripts of replicate/cog's `integration-tests/tests/` that
exercise the runtime (Apache-2.0, see its README.md for the commit); `tests/cogscript.py`
runs one as Cog's harness does, with cogserve playing `cog` and every process given only
what Cog's harness passes on (no SSL_CERT_FILE: environment builds must trust the system's
store by themselves). Scripts that need Docker or the cog CLI's own commands are not here;
`tests/cog_scripts/RESULTS.md` lists every script of the commit with its verdict.

A script that fails today because of work outside this module's reach is an expected
failure naming why; `strict` makes it fail here the day it passes, so the list stays true.
"""

from __future__ import annotations

import pathlib

import pytest
from cogscript import EXPECTED_FAILURES, Verdict, run_script

SCRIPTS = pathlib.Path(__file__).parent / "cog_scripts"


@pytest.mark.parametrize("script", sorted(SCRIPTS.glob("*.txtar")), ids=lambda p: p.stem)
def test_cog_script(script: pathlib.Path, tmp_path: pathlib.Path,
                    request: pytest.FixtureRequest) -> None:
    if script.stem in EXPECTED_FAILURES:
        request.applymarker(pytest.mark.xfail(reason=EXPECTED_FAILURES[script.stem],
                                              strict=True))
    outcome = run_script(script, tmp_path / "work")
    assert outcome.verdict is Verdict.PASS, f"{outcome.reason}\n\n{outcome.log[-6000:]}"
