"""Turn the worker's file markers into what the client receives: data or upload URLs.

The worker reports a file by path (`{"__cogserve_file__": path}`); here it becomes a
base64 `data:` URL, or is uploaded with `PUT` multipart/form-data to the prediction's
`output_file_prefix` or the server's `--upload-url`, and replaced by the URL (an
`--upload-url s3://...` is written to the bucket instead: `bucket_uploads`).
Large files are the point of care: an upload streams from disk, and a data URL is
encoded chunk by chunk into one buffer, so a 50 MiB file never exists in the parent
as raw bytes, base64 bytes and a string at once.
"""

from __future__ import annotations

import os
import pathlib
import re
from typing import TYPE_CHECKING, Any

import pybase64

from cogserve.process import spans
from cogserve.runtime.events import EventBus, RuntimeEvent
from cogserve.runtime.handover import discard_spilled_output, mime_type
from cogserve.wire.protocol import FILE_KEY

if TYPE_CHECKING:
    from cogserve.runtime.bucket_uploads import BucketUploader
    from cogserve.runtime.resolver import Resolver
    from cogserve.runtime.uploads import Uploader

_CHUNK = 3 * (1 << 18)  # a multiple of 3, so chunks encode without padding in between
# names tempfile makes (tmp + 8 random characters) say nothing to the client
_TEMP_NAME = re.compile(r"^tmp[a-z0-9_]{8}")


class FileOutputs:
    """A server's file outputs: `--upload-url`, the event bus, and the uploader (made on
    the first upload, so httpx is imported only by servers that upload; it resolves with
    the Service's `resolver`). One per Service."""

    def __init__(self, upload_url: str | None, bus: EventBus, resolver: Resolver) -> None:
        self.upload_url = upload_url
        self.bus = bus
        self.resolver = resolver
        self._uploader: Uploader | None = None
        self._bucket_uploader: BucketUploader | None = None

    async def resolve(self, value: Any, prediction: Any, index: int | None = None) -> Any:
        """Replace every file marker in `value` (recursively).

        `index` numbers a file among its siblings (its place in a list, or an iterator
        output's place in the stream), for upload names like `output.2.png`.
        """
        if isinstance(value, dict):
            if FILE_KEY in value and len(value) == 1:
                return await self._resolve_one(value[FILE_KEY], prediction, index)
            return {k: await self.resolve(v, prediction, index) for k, v in value.items()}
        if isinstance(value, list):
            return [await self.resolve(v, prediction, i) for i, v in enumerate(value)]
        return value

    async def _resolve_one(self, path: str, prediction: Any, index: int | None) -> str:
        prefix = getattr(prediction, "output_file_prefix", None) or self.upload_url
        try:
            if prefix:
                return await self._upload(path, prefix, prediction, index)
            return data_url(path)
        finally:
            discard_spilled_output(path)

    async def _upload(self, path: str, prefix: str, prediction: Any,
                      index: int | None) -> str:
        from cogserve import buckets  # on an upload only

        uploader = self._bucket() if prefix.startswith(buckets.SCHEMES) else self._http()
        name = upload_name(path, index)
        try:
            # the request carries the prediction's trace context (its span's child
            # with tracing on, else the incoming traceparent, as Cog sends it)
            context = getattr(prediction, "context", None) or {}
            with spans.client_span("upload", context, **{"cog.upload.name": name}) \
                    as headers:
                url = await uploader.upload(path, prefix, name, headers)
        except BaseException:
            self.bus.emit(RuntimeEvent.UPLOAD, bytes=0, ok=False)
            raise
        self.bus.emit(RuntimeEvent.UPLOAD, bytes=os.path.getsize(path), ok=True)
        return url

    def _http(self) -> Uploader:
        if self._uploader is None:
            from cogserve.runtime.uploads import Uploader

            self._uploader = Uploader(self.resolver)
        return self._uploader

    def _bucket(self) -> BucketUploader:
        """--upload-url s3://... (or gs://): the object store's uploader."""
        if self._bucket_uploader is None:
            from cogserve.process.envvars import upload_presign
            from cogserve.runtime.bucket_uploads import BucketUploader

            self._bucket_uploader = BucketUploader(upload_presign())
        return self._bucket_uploader


def upload_name(path: str, index: int | None) -> str:
    """The file's own name, or `output[.index].ext` when it has no meaningful one."""
    name = pathlib.Path(path).name
    stem, ext = os.path.splitext(name)
    if stem and stem != "output" and not _TEMP_NAME.match(stem):
        return name
    return f"output.{index}{ext}" if index is not None else f"output{ext}"


def data_url(path: str) -> str:
    """Encode a file as a data URL: one base64 buffer filled chunk by chunk, then the str.

    Peak memory is about twice the encoded size (the buffer and the final str), instead
    of raw + encoded + decoded + concatenated copies.
    """
    size = os.path.getsize(path)
    head = f"data:{mime_type(pathlib.Path(path).name)};base64,".encode("ascii")
    out = bytearray(len(head) + 4 * ((size + 2) // 3))
    out[: len(head)] = head
    pos = len(head)
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            encoded = pybase64.b64encode(chunk)
            out[pos: pos + len(encoded)] = encoded
            pos += len(encoded)
    if pos != len(out):  # the file changed size while we read it
        del out[pos:]
    return out.decode("ascii")
