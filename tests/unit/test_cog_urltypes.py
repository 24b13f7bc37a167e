"""cog.types as models use it: URLFile / URLPath (Cog's lazy remote-file types),
Path.validate, File.validate, get_filename, Secret, BaseModel, and the runner bridge."""

from __future__ import annotations

import dataclasses
import http.server
import io
import pathlib
import pickle
import sys
import threading
import warnings
from collections.abc import Iterator

import pytest

from cogserve.cog import BaseModel, BaseRunner, Input, Secret
from cogserve.cog.types import File, Path, URLFile, URLPath, get_filename
from cogserve.sdk.runner import MISSING, DefaultFactory


@pytest.fixture
def site() -> Iterator[str]:
    """A local HTTP server answering every GET with the path's bytes."""

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = f"content of {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_urlfile_takes_http_urls_only_and_pickles_as_its_url():
    with pytest.raises(ValueError, match="HTTP or HTTPS"):
        URLFile("file:///etc/passwd")
    handle = URLFile("https://example.com/a/b.png")
    assert handle.name == "b.png"
    assert repr(handle).endswith("for 'https://example.com/a/b.png'>")  # not opened
    again = pickle.loads(pickle.dumps(handle))
    assert again.__getstate__() == {"name": "b.png", "url": "https://example.com/a/b.png"}


def test_urlfile_reads_the_response_when_first_used(site):
    handle = URLFile(f"{site}/x/y.txt", filename="named.txt")
    assert handle.name == "named.txt"
    assert handle.read() == b"content of /x/y.txt"
    assert "wrapping" in repr(handle)


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


def test_path_validate_keeps_paths_and_defers_urls(site):
    assert Path.validate("/tmp/a.txt") == Path("/tmp/a.txt")
    local = pathlib.Path("/x")
    assert Path.validate(local) is local
    remote = Path.validate(f"{site}/files/w%20x.bin")
    assert isinstance(remote, URLPath) and remote.filename == "w x.bin"
    converted = remote.convert()
    try:
        assert converted.read_bytes() == b"content of /files/w%20x.bin"
    finally:
        remote.unlink()
    data = Path.validate("data:text/plain;base64,aGk=")
    assert isinstance(data, URLPath) and data.filename == "file.txt"


def test_file_validate():
    handle = io.BytesIO(b"x")
    assert File.validate(handle) is handle
    assert File.validate("data:text/plain;base64,aGk=").read() == b"hi"
    assert isinstance(File.validate("https://example.com/f"), URLFile)
    with pytest.raises(ValueError, match="'ftp' is not a valid URL scheme"):
        File.validate("ftp://example.com/f")


def test_get_filename():
    assert get_filename("https://example.com/a/my%20file.png?x=1") == "my file.png"
    assert get_filename("data:image/png;base64,AAAA") == "file.png"
    assert get_filename("data:application/x-unknown-thing,abc") == "file"
    long = get_filename("https://example.com/" + "é" * 150 + ".tar.gz")
    assert len(long.encode()) <= 200 and long.endswith("~.gz")


def test_secret_is_cogs_frozen_dataclass():
    secret = Secret(secret_value="sk-1")
    assert (str(secret), repr(secret)) == ("**********", "Secret(**********)")
    assert (str(Secret()), secret.get_secret_value()) == ("", "sk-1")
    assert secret == Secret("sk-1") and hash(secret) == hash(Secret("sk-1"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        secret.secret_value = "other"  # type: ignore[misc]


def test_input_keywords():
    assert Input().default is MISSING  # not given: the input is required
    assert Input(default=None).default is None
    assert Input(accept="image/*").accept == "image/*"
    made = Input(default_factory=list).default
    assert isinstance(made, DefaultFactory) and made.factory() == []
    with pytest.raises(TypeError, match="not both"):
        Input(default=[], default_factory=list)


def test_basemodel_options():
    class Out(BaseModel):
        a: int
        b: str = "x"

    assert Out(1) == Out(a=1, b="x")

    class Manual(BaseModel, auto_dataclass=False):
        a: int = 1

    assert not dataclasses.is_dataclass(Manual)
    with pytest.raises(ValueError, match="auto_dataclass=True"):
        class Broken(Out, auto_dataclass=False):
            pass

    @dataclasses.dataclass
    class Mixin:
        z: int = 0

    with pytest.raises(TypeError, match='Cannot mixin dataclass "Mixin"'):
        class Mixed(BaseModel, Mixin):
            pass


def test_run_and_predict_bridge_each_other():
    class Old(BaseRunner):
        def predict(self, x: int) -> int:
            return x + 1

    class New(BaseRunner):
        def run(self, x: int) -> int:
            return x * 2

    assert Old().run(x=1) == 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert New().predict(x=3) == 6
    assert [str(w.message) for w in caught] == ["New.predict() is deprecated; use run() instead"]
    with pytest.raises(NotImplementedError):
        BaseRunner().run()


def test_cog_predictor_helpers(tmp_path, monkeypatch):
    from cogserve.cog.predictor import (
        extract_setup_weights,
        has_setup_weights,
        load_predictor_from_ref,
    )

    (tmp_path / "helpers_model.py").write_text(
        "from cogserve import BasePredictor\n\n"
        "class Predictor(BasePredictor):\n"
        "    def setup(self, weights=None):\n        pass\n\n"
        "    def predict(self) -> str:\n        return 'p'\n\n"
        "def plain() -> str:\n    return 'f'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the import adds tmp_path to it
    monkeypatch.setitem(sys.modules, "helpers_model", None)  # removed again after the test
    del sys.modules["helpers_model"]
    monkeypatch.setenv("COG_WEIGHTS", "https://example.com/w")
    runner = load_predictor_from_ref("helpers_model.py")  # no name: Runner, else Predictor
    assert type(runner).__name__ == "Predictor" and runner.run() == "p"
    assert load_predictor_from_ref("helpers_model.py:plain")() == "f"
    assert has_setup_weights(runner) and not has_setup_weights(object())  # type: ignore[arg-type]
    assert extract_setup_weights(runner) == "https://example.com/w"
    monkeypatch.delenv("COG_WEIGHTS")
    assert extract_setup_weights(runner) is None
