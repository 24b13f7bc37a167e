"""Environment variables: unset or empty is the default; a bad value is refused by name."""

from __future__ import annotations

import pathlib

import pytest

from cogserve.exceptions import DefinitionError
from cogserve.process.envvars import (
    env_choice,
    env_duration,
    env_float,
    env_int,
    env_port,
    env_store_root,
    env_switch,
    env_text,
)
from cogserve.process.netpolicy import URLPolicy

NAME = "COGSERVE_TEST_VARIABLE"


def test_unset_and_empty_mean_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NAME, raising=False)
    assert env_float(NAME, 1.5) == 1.5 and env_int(NAME, 3) == 3
    assert env_duration(NAME, 0.5) == 0.5 and env_text(NAME, "x") == "x"
    assert env_switch(NAME, False) is False
    monkeypatch.setenv(NAME, "  ")
    assert env_int(NAME, None) is None and env_duration(NAME, 2.0) == 2.0


@pytest.mark.parametrize(("raw", "seconds"), [("0.5", 0.5), ("0.5s", 0.5), ("500ms", 0.5),
                                              ("2", 2.0)])
def test_durations(monkeypatch: pytest.MonkeyPatch, raw: str, seconds: float) -> None:
    monkeypatch.setenv(NAME, raw)
    assert env_duration(NAME, 9.0) == seconds


@pytest.mark.parametrize(("reader", "raw", "words"), [
    (lambda: env_float(NAME, 1.0), "fast", "is not a number"),
    (lambda: env_int(NAME, 1), "2.5", "is not a whole number"),
    (lambda: env_int(NAME, 1, minimum=0), "-1", "must be at least 0"),
    (lambda: env_duration(NAME, 1.0), "soon", "is not a duration"),
    (lambda: env_float(NAME, 1.0), "nan", "is not a number"),
    (lambda: env_choice(NAME, URLPolicy, URLPolicy.ANY), "open", "say 'any' or 'public'"),
])
def test_a_bad_value_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch, reader,
                                                    raw: str, words: str) -> None:
    monkeypatch.setenv(NAME, raw)
    with pytest.raises(DefinitionError) as caught:
        reader()
    assert NAME in str(caught.value) and repr(raw) in str(caught.value)
    assert words in str(caught.value)


def test_whole_numbers_and_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NAME, "1e3")
    assert env_int(NAME, None) == 1000
    for raw in ("1", "true", "YES", "on"):
        monkeypatch.setenv(NAME, raw)
        assert env_switch(NAME, False)
    monkeypatch.setenv(NAME, "0")
    assert not env_switch(NAME, True)


@pytest.mark.parametrize(("raw", "value"), [("", URLPolicy.ANY), ("Public", URLPolicy.PUBLIC),
                                            (" any ", URLPolicy.ANY)])
def test_choices(monkeypatch: pytest.MonkeyPatch, raw: str, value: URLPolicy) -> None:
    monkeypatch.setenv(NAME, raw)
    assert env_choice(NAME, URLPolicy, URLPolicy.ANY) is value


@pytest.mark.parametrize(("raw", "value"), [("", True), ("0", False), ("off", False),
                                            ("No", False), ("1", True), ("on", True)])
def test_switches(monkeypatch: pytest.MonkeyPatch, raw: str, value: bool) -> None:
    monkeypatch.setenv(NAME, raw)
    assert env_switch(NAME, True) is value


def test_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NAME, raising=False)
    assert env_port(NAME, None) is None and env_port(NAME, 5000) == 5000
    monkeypatch.setenv(NAME, "8080")
    assert env_port(NAME, None) == 8080
    monkeypatch.setenv(NAME, "0")
    assert env_port(NAME, 5000, any_free=True) == 0  # the system picks one


@pytest.mark.parametrize(("reader", "raw", "words"), [
    (lambda: env_switch(NAME, True), "maybe", "is not a yes/no value"),
    (lambda: env_port(NAME, None), "0", "is not a port number"),
    (lambda: env_port(NAME, None, any_free=True), "65536", "is not a port number"),
    (lambda: env_port(NAME, None), "http", "is not a number"),
])
def test_bad_switches_and_ports_are_refused(monkeypatch: pytest.MonkeyPatch, reader,
                                            raw: str, words: str) -> None:
    monkeypatch.setenv(NAME, raw)
    with pytest.raises(DefinitionError) as caught:
        reader()
    assert f"{NAME}={raw!r}" in str(caught.value) and words in str(caught.value)


def test_the_env_store_root(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("COGSERVE_ENV_DIR", str(tmp_path / "envs"))
    assert env_store_root() == tmp_path / "envs"
    monkeypatch.setenv("COGSERVE_ENV_DIR", " ")  # empty: the default
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert env_store_root() == tmp_path / "cache" / "cogserve" / "envs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert env_store_root() == pathlib.Path.home() / ".cache" / "cogserve" / "envs"


def test_the_memory_folder_is_dev_shm_a_named_folder_or_none(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogserve.process.envvars import DEFAULT_MEMORY_ROOT, memory_root

    monkeypatch.delenv("COGSERVE_MEMORY_DIR", raising=False)
    assert memory_root() == (DEFAULT_MEMORY_ROOT if pathlib.Path(DEFAULT_MEMORY_ROOT).is_dir()
                             else None)
    monkeypatch.setenv("COGSERVE_MEMORY_DIR", str(tmp_path))
    assert memory_root() == str(tmp_path)
    monkeypatch.setenv("COGSERVE_MEMORY_DIR", "None")
    assert memory_root() is None
    monkeypatch.setenv("COGSERVE_MEMORY_DIR", str(tmp_path / "missing"))
    with pytest.raises(DefinitionError, match=r"COGSERVE_MEMORY_DIR='.*missing' is not a folder"):
        memory_root()
