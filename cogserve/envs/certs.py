"""Which certificate authorities an environment build trusts: what pip trusts, and COG_CA_CERT.

pip verifies TLS with the system's certificate store; uv, by default, with the Mozilla
roots compiled into it. Behind a proxy or VPN that intercepts TLS (its own CA installed
in the system store) pip works and uv fails with `invalid peer certificate: UnknownIssuer`,
unless SSL_CERT_FILE happens to be set. So every uv that cogserve runs is told to use the
system store (`UV_SYSTEM_CERTS`, called `UV_NATIVE_TLS` by uv releases before it: each
uv reads the name it knows and ignores the other).

`COG_CA_CERT` adds certificates as Cog's build does (`pkg/dockerfile/cacert.go`: a file,
a folder of `.crt`/`.pem` files, inline PEM, or base64 of PEM). Cog appends them to the
image's system bundle; cogserve writes the system bundle plus them to a temporary file
and gives uv that file as SSL_CERT_FILE (which replaces uv's store rather than adding to
it, hence the copy of the system bundle), for the duration of one build.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import pathlib
import re
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from cogserve.process.envvars import env_text

VARIABLE = "COG_CA_CERT"

_BEGIN = "-----BEGIN CERTIFICATE-----"
_END = "-----END CERTIFICATE-----"

# How uv (rustls) and OpenSSL say that a server's certificate chain is not trusted.
_UNTRUSTED = re.compile(r"invalid peer certificate|UnknownIssuer|certificate verify failed|"
                        r"self[- ]signed certificate", re.IGNORECASE)


class CertificateError(Exception):
    """COG_CA_CERT names something that is not a certificate (Cog's words)."""


@dataclass(frozen=True)
class Trust:
    """What one build trusts: the variables uv runs with, and how to say it."""

    env: dict[str, str] = field(default_factory=dict)
    description: str = ""

    def failure_hint(self, uv_output: str) -> str | None:
        """What to do when uv's output says a certificate was not trusted, else None."""
        if not _UNTRUSTED.search(uv_output):
            return None
        return (f"a server's TLS certificate is not trusted by {self.description}. Behind a "
                "proxy or VPN that intercepts TLS, give its CA certificate in "
                f"{VARIABLE}=/path/to/ca.crt (a file, a folder of .crt/.pem files, inline "
                "PEM or base64-encoded PEM), or add it to the system store "
                "(/usr/local/share/ca-certificates/, then update-ca-certificates)")


def system_bundle() -> pathlib.Path | None:
    """The system store's bundle file as OpenSSL finds it (SSL_CERT_FILE first)."""
    paths = ssl.get_default_verify_paths()
    for candidate in (env_text(paths.openssl_cafile_env), paths.cafile):
        if candidate and os.path.isfile(candidate):
            return pathlib.Path(candidate)
    return None


@contextlib.contextmanager
def for_build() -> Iterator[Trust]:
    """The trust of one build; a COG_CA_CERT bundle file lives until the build ends."""
    system = system_bundle()
    store = (f"the system's certificate store ({system})" if system
             else "the system's certificate store")
    env = {"UV_SYSTEM_CERTS": "1", "UV_NATIVE_TLS": "1"}
    value = env_text(VARIABLE)
    if not value:
        yield Trust(env, store)
        return
    extra, origin = read_ca_cert(value)
    fd, name = tempfile.mkstemp(prefix="cogserve-ca-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as bundle:
            if system is not None:
                bundle.write(system.read_bytes().rstrip(b"\n") + b"\n")
            bundle.write(extra)
        yield Trust({**env, "SSL_CERT_FILE": name}, f"{store} plus {VARIABLE} ({origin})")
    finally:
        pathlib.Path(name).unlink(missing_ok=True)


def read_ca_cert(value: str) -> tuple[bytes, str]:
    """COG_CA_CERT's certificates as PEM, and where they came from, by Cog's rules."""
    value = value.strip()
    path = pathlib.Path(value)
    try:
        is_dir, exists = path.is_dir(), path.exists()
    except OSError:  # an inline PEM is not a usable path (too long, odd bytes)
        is_dir = exists = False
    if is_dir:
        return _read_folder(path), f"folder {path}"
    if exists:
        return _pem(_read(path), f"file {path}"), f"file {path}"
    if value.startswith("-----BEGIN"):
        return _pem(value.encode(), "the inline value"), "inline PEM"
    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if decoded.startswith(b"-----BEGIN"):
        return _pem(decoded, "the base64 value"), "base64 PEM"
    raise CertificateError(f"{VARIABLE}: invalid value - must be a file path, directory, "
                           "PEM certificate, or base64-encoded PEM")


def _read(path: pathlib.Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CertificateError(f"{VARIABLE}: failed to read file {path}: {exc.strerror}"
                               ) from None


def _read_folder(folder: pathlib.Path) -> bytes:
    parts = [_pem(_read(entry), str(entry)) for entry in sorted(folder.iterdir())
             if entry.is_file() and entry.suffix.lower() in (".crt", ".pem")]
    if not parts:
        raise CertificateError(f"{VARIABLE}: no .crt or .pem files found in directory "
                               f"{folder}")
    return b"".join(parts)


def _pem(data: bytes, where: str) -> bytes:
    text = data.decode(errors="replace").strip()
    if not text.startswith(_BEGIN):
        raise CertificateError(f"{VARIABLE}: invalid PEM in {where}: must start with "
                               f"'{_BEGIN}'")
    if _END not in text:
        raise CertificateError(f"{VARIABLE}: invalid PEM in {where}: must contain '{_END}'")
    return text.encode() + b"\n"
