"""Object storage (S3 and S3-compatible stores: AWS, R2, MinIO, GCS's interoperable
endpoint) as cogserve reaches it: which URLs name an object, and how a store is opened.

Used by both sides: the worker reads `s3://` and `gs://` file inputs
(`worker/objects.py`), the parent writes file outputs to `--upload-url s3://...`
(`runtime/bucket_uploads.py`). The client is `obstore` (the `cogserve[s3]` extra),
chosen by measuring against boto3: its import and a store cost ~0.3 s and ~9 MB where
boto3's cost ~4 s and ~41 MB on the same (loaded) machine, and a 100 kB GET ~0.5 ms of
CPU where boto3's took ~2.6 ms. Nothing here imports it until a store is opened, so a
server that never sees a bucket URL pays nothing; without the extra, bucket URLs are
refused as any other non-http URL is.

Where the settings come from, in the order AWS's own tools use: the environment
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION or
AWS_DEFAULT_REGION, AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_S3), then the shared files
(~/.aws/credentials and ~/.aws/config, or AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE;
the profile AWS_PROFILE names, else `default`). An `http://` endpoint (MinIO, a local test
server) is allowed because the operator named it. `gs://` is the same client on Google's
interoperable endpoint (https://storage.googleapis.com) with an HMAC key in the same
variables.

Standard library only at import, and imported only for a URL that is not http(s) or
data: (validation, the worker's inputs), so the common path never loads it.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import threading
from typing import Any

from cogserve.exceptions import FetchError

SCHEMES = ("s3://", "gs://")
GCS_ENDPOINT = "https://storage.googleapis.com"
INSTALL_HINT = "pip install 'cogserve[s3]'"


@dataclasses.dataclass(frozen=True)
class ObjectURL:
    """`s3://bucket/key` or `gs://bucket/key`, parsed."""

    scheme: str  # "s3" or "gs"
    bucket: str
    key: str

    @classmethod
    def parse(cls, url: str) -> ObjectURL:
        scheme, _, rest = url.partition("://")
        bucket, _, key = rest.partition("/")
        if scheme not in ("s3", "gs") or not bucket:
            raise ValueError(f"{url} is not an s3://bucket/key or gs://bucket/key URL")
        return cls(scheme, bucket, key)

    def __str__(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}"


def installed() -> bool:
    """Whether the `s3` extra (obstore) can be imported; looked up once, without
    importing it (validation asks only for inputs that name a bucket)."""
    global _INSTALLED
    if _INSTALLED is None:
        import importlib.util

        _INSTALLED = importlib.util.find_spec("obstore") is not None
    return _INSTALLED


_INSTALLED: bool | None = None


def accepts(url: str) -> bool:
    """Whether `url` names an object this process can read: a bucket URL, with the
    extra installed."""
    return url.startswith(SCHEMES) and installed()


def settings() -> dict[str, str]:
    """obstore's S3 settings from the shared AWS files (the environment, which obstore
    reads itself, wins over them), and `allow_http` for an http:// endpoint."""
    found: dict[str, str] = {}
    profile = os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE") \
        or "default"
    home = pathlib.Path.home() / ".aws"
    credentials = _section(os.environ.get("AWS_SHARED_CREDENTIALS_FILE")
                           or home / "credentials", profile)
    config = _section(os.environ.get("AWS_CONFIG_FILE") or home / "config",
                      profile if profile == "default" else f"profile {profile}")
    for ours, theirs, names in (
            ("access_key_id", credentials, ("aws_access_key_id",)),
            ("secret_access_key", credentials, ("aws_secret_access_key",)),
            ("token", credentials, ("aws_session_token",)),
            ("region", config, ("region",)),
            ("endpoint", config, ("endpoint_url",))):
        for name in names:
            if theirs.get(name):
                found[ours] = theirs[name]
    environment = {"access_key_id": "AWS_ACCESS_KEY_ID", "secret_access_key":
                   "AWS_SECRET_ACCESS_KEY", "token": "AWS_SESSION_TOKEN",
                   "region": "AWS_REGION", "endpoint": "AWS_ENDPOINT_URL"}
    if os.environ.get("AWS_ACCESS_KEY_ID"):  # a key from the environment: not the file's
        for name in ("access_key_id", "secret_access_key", "token"):
            found.pop(name, None)
    for ours, variable in environment.items():
        value = os.environ.get(variable) or (
            os.environ.get("AWS_DEFAULT_REGION") if ours == "region" else None)
        if value:
            found[ours] = value
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or found.get("endpoint", "")
    if endpoint.startswith("http://"):
        found["allow_http"] = "true"
    return found


def _section(path: str | os.PathLike[str], name: str) -> dict[str, str]:
    import configparser

    parser = configparser.RawConfigParser()
    try:
        parser.read(path)
    except configparser.Error:
        return {}
    return dict(parser[name]) if parser.has_section(name) else {}


class Stores:
    """Open stores by bucket (a store keeps its connections), for one process; threads
    of the worker's download pool share it. `timeout`: seconds to connect and per read
    (0: none), so an unreachable or stalled store fails instead of hanging; `total`:
    seconds one request may take in all (a whole download or upload part)."""

    def __init__(self, timeout: float, total: float) -> None:
        self.timeout = timeout
        self.total = total
        self._open: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def store(self, url: ObjectURL) -> Any:
        key = (url.scheme, url.bucket)
        with self._lock:
            store = self._open.get(key)
            if store is None:
                store = self._open[key] = self._make(url)
        return store

    def _make(self, url: ObjectURL) -> Any:
        try:
            from obstore.store import S3Store
        except ImportError:
            raise FetchError(f"{url.scheme}:// URLs need the s3 extra: {INSTALL_HINT}") \
                from None
        config: dict[str, Any] = settings()
        if url.scheme == "gs":
            config["endpoint"] = GCS_ENDPOINT
            config.pop("allow_http", None)
        import datetime

        seconds = datetime.timedelta
        client: dict[str, Any] = {"user_agent": "cogserve"}
        if self.timeout:
            client.update(connect_timeout=seconds(seconds=self.timeout),
                          read_timeout=seconds(seconds=self.timeout))
        if self.total:
            client["timeout"] = seconds(seconds=self.total)
        # a failed request is tried twice more, within the per-request timeout
        retry = {"max_retries": 2, "retry_timeout": seconds(seconds=self.timeout or 60)}
        return S3Store(url.bucket, config=config,  # type: ignore[arg-type]
                       client_options=client, retry_config=retry)  # type: ignore[arg-type]


def describe(error: BaseException) -> str:
    """The store's error in one line: its HTTP status and S3 error code and message when
    it answered (`HTTP 404 Not Found: NoSuchKey: The specified key does not exist.`),
    else what failed and why (`error sending request (Connection refused)`), without
    obstore's dump of its request state."""
    import re

    head, _, debug = str(error).partition("\n\nDebug source:")
    code = re.search(r"<Code>([^<]*)</Code>", head)
    if code is not None:
        message = re.search(r"<Message>([^<]*)</Message>", head)
        status = re.search(r"status code: (\d{3}[^:<]*)", head)
        said = f"{code.group(1)}: {message.group(1)}" if message else code.group(1)
        return f"HTTP {status.group(1).strip()}: {said}" if status else said
    reason = head.rsplit(" - ", 1)[-1].strip() or type(error).__name__
    causes = re.findall(r'message: "([^"]*)"', debug)
    return f"{reason} ({causes[-1]})" if causes else reason


def kind(error: BaseException) -> str:
    """What the store's error means, for a message: `no such bucket`, `no such object`,
    `access denied`, or empty."""
    from obstore import exceptions

    if "<Code>NoSuchBucket</Code>" in str(error):
        return "no such bucket"
    if isinstance(error, FileNotFoundError | exceptions.NotFoundError):
        return "no such object"
    if isinstance(error, PermissionError | exceptions.PermissionDeniedError
                  | exceptions.UnauthenticatedError):
        return "access denied"
    text = str(error)
    if "<Code>AccessDenied</Code>" in text or "<Code>InvalidAccessKeyId</Code>" in text \
            or "<Code>SignatureDoesNotMatch</Code>" in text:
        return "access denied"
    return ""
