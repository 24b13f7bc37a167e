"""Environment builds trust what pip trusts (the system's store) and COG_CA_CERT, as Cog.

The index is HTTPS signed by a CA of the test's own (tests/tlsindex.py), which is what a
TLS-intercepting proxy looks like to uv. Every build runs without SSL_CERT_FILE and the
other certificate variables a shell may carry, as from a clean login or a service manager.
"""

from __future__ import annotations

import base64
import pathlib
from collections.abc import Iterator

import pytest
from cli_harness import cogserve
from tlsindex import MODULE, PACKAGE, VALUE, TlsIndex

# What a shell may have set that would hide the question of which store uv uses.
CLEAN = ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
         "UV_SYSTEM_CERTS", "UV_NATIVE_TLS", "COG_CA_CERT")


@pytest.fixture
def index(tmp_path: pathlib.Path) -> Iterator[TlsIndex]:
    with TlsIndex(tmp_path / "tls") as served:
        yield served


def _model(tmp: pathlib.Path, index: TlsIndex, label: str) -> pathlib.Path:
    """A model whose requirements need the private index (and PyPI, for cogserve's own)."""
    model = tmp / f"model-{label}"
    model.mkdir()
    (model / "requirements.txt").write_text(
        f"# {label}\n--extra-index-url {index.url}\n{PACKAGE}==0.1.0\n")
    (model / "cog.yaml").write_text('build:\n  python_requirements: "requirements.txt"\n'
                                    'run: "run.py:run"\n')
    (model / "run.py").write_text(f"import {MODULE}\n\n\ndef run() -> str:\n"
                                  f"    return {MODULE}.VALUE\n")
    return model


def test_an_untrusted_certificate_names_the_store_used_and_how_to_add_one(tmp_path, index
                                                                          ) -> None:
    result = cogserve("env", _model(tmp_path, index, "untrusted"), unset=CLEAN, timeout=300)
    assert result.returncode == 1
    assert "a server's TLS certificate is not trusted by the system's certificate store" \
        in result.stderr
    assert "COG_CA_CERT=/path/to/ca.crt" in result.stderr
    assert "invalid peer certificate" in result.stderr  # uv's own words follow
    assert result.stdout == ""


@pytest.mark.parametrize("form", ["file", "folder", "inline", "base64"])
def test_cog_ca_cert_in_each_of_cogs_forms_is_trusted(tmp_path, index, form: str) -> None:
    folder = tmp_path / "certs"
    folder.mkdir()
    (folder / "proxy.crt").write_bytes(index.ca_pem)
    (folder / "notes.txt").write_text("not a certificate: a folder's other files are skipped")
    value = {"file": str(folder / "proxy.crt"), "folder": str(folder),
             "inline": index.ca_pem.decode(),
             "base64": base64.b64encode(index.ca_pem).decode()}[form]
    model = _model(tmp_path, index, form)
    result = cogserve("predict", model, env={"COG_CA_CERT": value},
                      unset=tuple(v for v in CLEAN if v != "COG_CA_CERT"), timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == VALUE
    cogserve("env", model, "--remove")


def test_a_cog_ca_cert_that_is_not_a_certificate_is_refused_in_cogs_words(tmp_path, index
                                                                          ) -> None:
    result = cogserve("env", _model(tmp_path, index, "bad"),
                      env={"COG_CA_CERT": "not-a-path-nor-pem"}, timeout=300)
    assert result.returncode == 1
    assert ("COG_CA_CERT: invalid value - must be a file path, directory, PEM certificate, "
            "or base64-encoded PEM") in result.stderr
