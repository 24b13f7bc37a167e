"""cogserve.process.heap: glibc's malloc thresholds, raised unless the user set them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cogserve.process import heap


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_thresholds_take_on_glibc() -> None:
    # in a process of its own: the test runner's malloc stays as it was
    got = subprocess.run([sys.executable, "-c",
                          "from cogserve.process.heap import keep_freed_memory as k; print(k())"],
                         capture_output=True, text=True, check=True, env={"PATH": "/usr/bin"})
    assert got.stdout.strip() == "True"


@pytest.mark.parametrize(("name", "value"), [
    ("MALLOC_TRIM_THRESHOLD_", "1048576"),
    ("MALLOC_MMAP_THRESHOLD_", "65536"),
    ("MALLOC_TOP_PAD_", "0"),
    ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576"),
])
def test_the_users_setting_stands(monkeypatch: pytest.MonkeyPatch, name: str,
                                  value: str) -> None:
    monkeypatch.setenv(name, value)
    assert heap.keep_freed_memory() is False


def test_other_tunables_are_not_a_malloc_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0")
    for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_"):
        monkeypatch.delenv(name, raising=False)
    from cogserve.process.envvars import malloc_set_by_user

    assert malloc_set_by_user() is False
