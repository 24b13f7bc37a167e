"""The worker's prediction folders (`worker/tempdirs.py`): emptied and reused, never shared;
data: URL inputs in memory (`worker/dataurls.py`), on disk when memory cannot take them."""

from __future__ import annotations

import base64
import pathlib

import pytest

from cogserve.wire import protocol
from cogserve.worker import dataurls, tempdirs


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


def test_memory_folders_are_kept_apart_from_disk_ones(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    monkeypatch.setattr(tempdirs, "_memory", str(memory))
    monkeypatch.setattr(tempdirs, "_free_memory", [])
    in_memory, on_disk = tempdirs.take_memory(), tempdirs.take()
    assert in_memory is not None and in_memory.parent == memory and on_disk.parent == tmp_path
    tempdirs.release(in_memory)
    tempdirs.release(on_disk)
    assert tempdirs.take_memory() == in_memory and tempdirs.take() == on_disk


def test_no_memory_folder_without_one_from_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempdirs, "_memory", None)
    assert tempdirs.take_memory() is None


def test_a_data_url_goes_to_the_spare_folder_when_memory_cannot_take_it(
        tmp_path: pathlib.Path) -> None:
    full = tmp_path / "gone"  # writing there fails, as a full tmpfs does (ENOSPC)
    spare = tmp_path / "disk"
    spare.mkdir()
    url = "data:image/png;base64," + base64.b64encode(b"\x89PNG").decode()
    written = dataurls.write(url, full, "image", None, spare=lambda: spare)
    assert written == spare / "input.png" and written.read_bytes() == b"\x89PNG"
    with pytest.raises(OSError):  # no spare: the error is the prediction's
        dataurls.write(url, full, "image", None)


def test_data_urls_of_one_name_in_one_folder_are_numbered(tmp_path: pathlib.Path) -> None:
    url = "data:text/plain;base64," + base64.b64encode(b"hello").decode()
    names = [dataurls.write(url, tmp_path, f"doc{n}", None).name for n in range(3)]
    assert names == ["input.txt", "input.1.txt", "input.2.txt"]
    assert [(tmp_path / name).read_bytes() for name in names] == [b"hello"] * 3
    (tmp_path / "notes.md").write_text("taken")
    assert dataurls.unique(tmp_path, "notes.md") == tmp_path / "notes.1.md"
