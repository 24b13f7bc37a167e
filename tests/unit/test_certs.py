"""COG_CA_CERT read by Cog's rules (pkg/dockerfile/cacert.go), and the bundle a build gets."""

from __future__ import annotations

import base64
import os
import pathlib

import pytest

from cogserve.envs import certs

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"


def test_each_form_reads_to_the_same_pem(tmp_path: pathlib.Path) -> None:
    (tmp_path / "a.crt").write_text(PEM + "\n\n")
    (tmp_path / "b.PEM").write_text(PEM)
    (tmp_path / "c.key").write_text("skipped: neither .crt nor .pem")
    want = (PEM + "\n").encode()
    assert certs.read_ca_cert(str(tmp_path / "a.crt")) == (want, f"file {tmp_path / 'a.crt'}")
    assert certs.read_ca_cert(f"  {PEM}  ") == (want, "inline PEM")
    assert certs.read_ca_cert(base64.b64encode(PEM.encode()).decode()) == (want, "base64 PEM")
    assert certs.read_ca_cert(str(tmp_path)) == (want * 2, f"folder {tmp_path}")


@pytest.mark.parametrize(("content", "message"), [
    ("hello", "must start with '-----BEGIN CERTIFICATE-----'"),
    ("-----BEGIN CERTIFICATE-----\nMIIB", "must contain '-----END CERTIFICATE-----'"),
])
def test_a_file_that_is_not_a_certificate_is_named(tmp_path, content, message) -> None:
    (tmp_path / "x.crt").write_text(content)
    with pytest.raises(certs.CertificateError, match=message):
        certs.read_ca_cert(str(tmp_path / "x.crt"))


def test_anything_else_is_refused_as_cog_refuses_it(tmp_path) -> None:
    for value in ("nothing-here", base64.b64encode(b"plain text").decode()):
        with pytest.raises(certs.CertificateError, match="invalid value - must be a file path"):
            certs.read_ca_cert(value)
    with pytest.raises(certs.CertificateError, match="no .crt or .pem files found"):
        certs.read_ca_cert(str(tmp_path))


def test_a_build_trusts_the_system_store_and_cog_ca_cert_beside_it(monkeypatch) -> None:
    monkeypatch.delenv("COG_CA_CERT", raising=False)
    with certs.for_build() as trust:
        assert trust.env == {"UV_SYSTEM_CERTS": "1", "UV_NATIVE_TLS": "1"}
        assert trust.description.startswith("the system's certificate store")
    monkeypatch.setenv("COG_CA_CERT", PEM)
    with certs.for_build() as trust:
        bundle = pathlib.Path(trust.env["SSL_CERT_FILE"])
        text = bundle.read_text()
        assert text.endswith(PEM + "\n")
        system = certs.system_bundle()
        if system is not None:
            assert text.startswith(system.read_text().rstrip("\n"))
        assert trust.description.endswith("plus COG_CA_CERT (inline PEM)")
    assert not bundle.exists() and os.environ["COG_CA_CERT"] == PEM


def test_the_hint_is_given_only_for_a_certificate_failure() -> None:
    trust = certs.Trust({}, "the system's certificate store (/x.pem)")
    hint = trust.failure_hint("  cause: invalid peer certificate: UnknownIssuer")
    assert hint is not None and "not trusted by the system's certificate store (/x.pem)" in hint
    assert trust.failure_hint("No solution found when resolving dependencies") is None
