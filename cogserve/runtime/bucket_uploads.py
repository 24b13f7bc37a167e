"""File outputs written to a bucket: `--upload-url s3://bucket/prefix/` (or `gs://`,
`cogserve/buckets.py`). Each file becomes the object `prefix/name`, uploaded by obstore
from the file on disk (never read into memory here), in parts when it is larger than
PART_SIZE (an S3 multipart upload, its parts sent side by side); the client receives
its `s3://` URL, or a presigned `https://` URL for GET valid COGSERVE_UPLOAD_PRESIGN
seconds when that is set. A refused or failed upload is an `UploadError` with the
store's message, which fails the prediction.

Imported on the first upload to a bucket only (obstore with it).
"""

from __future__ import annotations

import datetime
import pathlib

from cogserve import buckets
from cogserve.runtime.uploads import UploadError

PART_SIZE = 8 << 20  # bytes per part of a multipart upload (S3's minimum is 5 MiB)
CONCURRENT_PARTS = 4
TIMEOUT = 60.0  # seconds to connect and per read of one request
TOTAL = 600.0  # seconds one request (a whole small upload, or one part) may take


class BucketUploader:
    def __init__(self, presign: float) -> None:
        self.presign = presign  # seconds a presigned URL is valid; 0: the s3:// URL
        self.stores = buckets.Stores(TIMEOUT, TOTAL)

    async def upload(self, path: str, prefix: str, name: str,
                     headers: dict[str, str] | None = None) -> str:
        """Upload `path` as `name` under `prefix`; its URL. (`headers`, the trace context
        an HTTP upload sends, have no place in a store's request.)"""
        base = prefix if prefix.endswith("/") else prefix + "/"
        try:
            where = buckets.ObjectURL.parse(base + name)
        except ValueError as exc:
            raise UploadError(f"uploading {name} failed: {exc}") from None
        try:
            import obstore

            store = self.stores.store(where)
            await obstore.put_async(store, where.key, pathlib.Path(path),
                                    chunk_size=PART_SIZE, max_concurrency=CONCURRENT_PARTS)
            if self.presign:
                return obstore.sign(store, "GET", where.key,
                                    datetime.timedelta(seconds=self.presign))
        except Exception as exc:  # the store's errors: denied, no bucket, unreachable
            what = buckets.kind(exc)
            raise UploadError(f"uploading {name} to {where} failed: "
                              f"{what + ': ' if what else ''}{buckets.describe(exc)}") from None
        return str(where)
