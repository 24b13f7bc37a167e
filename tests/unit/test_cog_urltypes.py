"""cog.types.URLFile / URLPath: Cog's lazy remote-file types, as models use them."""

from __future__ import annotations

import io
import pathlib
import pickle

import pytest

from cogserve.cog.types import URLFile, URLPath


def test_urlfile_takes_http_urls_only_and_pickles_as_its_url():
    with pytest.raises(ValueError, match="HTTP or HTTPS"):
        URLFile("file:///etc/passwd")
    handle = URLFile("https://example.com/a/b.png")
    assert handle.name == "b.png"
    again = pickle.loads(pickle.dumps(handle))
    assert (again.url, again.name) == ("https://example.com/a/b.png", "b.png")


def test_urlpath_is_a_path_named_by_its_source_and_converts_to_a_local_file():
    remote = URLPath(source="https://example.com/x.txt", filename="x.txt",
                     fileobj=io.BytesIO(b"remote bytes"))
    assert isinstance(remote, pathlib.Path)
    assert str(remote) == "https://example.com/x.txt"
    local = remote.convert()
    try:
        assert local.read_bytes() == b"remote bytes"
        assert remote.convert() == local  # fetched once
    finally:
        remote.unlink()
    assert not local.exists()
