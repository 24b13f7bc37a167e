"""A package index over HTTPS signed by a CA of the test's own: what a TLS-intercepting
proxy looks like to uv. Nobody trusts the CA until a test hands it over (COG_CA_CERT).

The index serves one tiny wheel (`cogserve-tlspkg`, written here with zipfile) as a
PEP 503 page, from a threaded `http.server` on 127.0.0.1 wrapped in TLS.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import pathlib
import ssl
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

PACKAGE = "cogserve-tlspkg"
MODULE = "cogserve_tlspkg"
VALUE = "served over a private CA"


class TlsIndex:
    def __init__(self, root: pathlib.Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.ca_pem, cert_pem, key_pem = _certificates()
        (root / "server.pem").write_bytes(cert_pem + key_pem)
        _write_index(root / "index")
        handler = _quiet_handler(str(root / "index"))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(root / "server.pem")
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}/simple/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def __enter__(self) -> TlsIndex:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _quiet_handler(directory: str) -> type[SimpleHTTPRequestHandler]:
    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=directory, **kwargs)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return Handler


def _certificates() -> tuple[bytes, bytes, bytes]:
    """A CA, and a certificate for 127.0.0.1 that it signed (rustls refuses a self-signed
    CA certificate used as the server's own)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cogserve test proxy CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                       crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False,
                                       decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return ca.public_bytes(pem), cert.public_bytes(pem), key_pem


def _write_index(index: pathlib.Path) -> None:
    name = f"{MODULE}-0.1.0-py3-none-any.whl"
    info = f"{MODULE}-0.1.0.dist-info"
    files = {
        f"{MODULE}/__init__.py": f"VALUE = {VALUE!r}\n".encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 0.1.0\n"
                            .encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
    }
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    project = index / "simple" / PACKAGE
    project.mkdir(parents=True)
    with zipfile.ZipFile(project / name, "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
    (project / "index.html").write_text(f'<a href="{name}">{name}</a>\n')


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
