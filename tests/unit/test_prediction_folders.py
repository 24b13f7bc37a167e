"""The worker's prediction folders (`worker/tempdirs.py`): emptied and reused, never shared."""

from __future__ import annotations

import pathlib

import pytest

from cogserve.wire import protocol
from cogserve.worker import tempdirs


@pytest.fixture(autouse=True)
def own_tmp(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempdirs, "base", lambda: str(tmp_path))
    monkeypatch.setattr(tempdirs, "_free", [])


def test_a_released_folder_is_emptied_and_given_to_the_next_prediction() -> None:
    first = tempdirs.take()
    assert first.name.startswith(protocol.PREDICTION_DIR_PREFIX)
    (first / "input.jpg").write_bytes(b"jpeg")
    (first / "tmpabc").write_text("the model's tempfile")
    tempdirs.release(first)
    assert first.is_dir() and not any(first.iterdir())
    assert tempdirs.take() == first
    assert tempdirs.take() != first  # taken: a second prediction gets a folder of its own


def test_a_folder_holding_a_folder_is_removed_whole() -> None:
    folder = tempdirs.take()
    (folder / "sub").mkdir()
    (folder / "sub" / "out.bin").write_bytes(b"x")
    tempdirs.release(folder)
    assert not folder.exists()
    assert tempdirs.take() != folder


def test_no_more_than_the_limit_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempdirs, "_KEEP", 2)
    folders = [tempdirs.take() for _ in range(3)]
    for folder in folders:
        tempdirs.release(folder)
    assert [f.exists() for f in folders] == [True, True, False]
