"""Object storage through the real server: `s3://` file inputs read from a bucket and
`--upload-url s3://...` outputs written to one, against a real S3-compatible server
(moto's, its own process): a large output in a multipart upload, presigned URLs, and a
missing object, denied credentials, an unreachable store and the size limit each failing
the prediction cleanly, the server serving on."""

from __future__ import annotations

import base64

import httpx
import pytest
from harness import free_port
from s3server import S3Server

MiB = 1 << 20
BLOCK = b"0123456789abcdef" * 65536  # what tests/models/files_out writes, repeated


@pytest.fixture
def s3():
    started: list[S3Server] = []

    def start(**kwargs) -> S3Server:
        server = S3Server(**kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def _data(url: str) -> bytes:
    assert url.startswith("data:"), url[:80]
    return base64.b64decode(url.partition(",")[2])


def _predict(server, **inputs) -> dict:
    r = server.client.post("/predictions", json={"input": inputs})
    assert r.status_code == 200, r.text
    return r.json()


def test_inputs_from_a_bucket_and_outputs_to_one(serve, s3):
    store = s3()
    client = store.client()
    client.create_bucket(Bucket="models")
    client.put_object(Bucket="models", Key="in/photo.txt", Body=b"pixels")
    client.put_object(Bucket="models", Key="in/big.bin", Body=b"x" * (2 * MiB))
    # inputs only: the output comes back as a data URL, the file as it was in the bucket
    reader = serve("files_out", env=store.env(COGSERVE_DOWNLOAD_MAX_BYTES=str(MiB)))
    done = _predict(reader, mode="echo", src="s3://models/in/photo.txt")
    assert done["status"] == "succeeded", done
    assert _data(done["output"]) == b"pixels"
    # a missing object fails the prediction, naming it and what the store said
    done = _predict(reader, mode="echo", src="s3://models/in/nothing.txt")
    assert done["status"] == "failed"
    assert "s3://models/in/nothing.txt" in done["error"]
    assert "no such object" in done["error"]
    done = _predict(reader, mode="echo", src="s3://no-bucket/x.txt")
    assert done["status"] == "failed" and "s3://no-bucket/x.txt" in done["error"]
    assert "no such bucket" in done["error"]
    # the size limit holds as for http downloads, with the same message
    done = _predict(reader, mode="echo", src="s3://models/in/big.bin")
    assert done["status"] == "failed"
    assert done["error"].endswith(f"s3://models/in/big.bin is {2 * MiB} bytes; the limit is "
                                  f"{MiB} (COGSERVE_DOWNLOAD_MAX_BYTES)")
    assert _data(_predict(reader, mode="echo", src="s3://models/in/photo.txt")["output"]) \
        == b"pixels"
    # outputs to the bucket: the s3:// URL of the object, its bytes those the model wrote
    writer = serve("files_out", "--upload-url", "s3://models/out/", env=store.env())
    done = _predict(writer, mode="echo", src="s3://models/in/photo.txt")
    assert done["output"] == "s3://models/out/photo.txt"
    assert client.get_object(Bucket="models", Key="out/photo.txt")["Body"].read() == b"pixels"
    size = 9 * MiB + 5  # past the part size: a multipart upload
    done = _predict(writer, mode="named", size=size, name="large.bin")
    assert done["status"] == "succeeded", done
    assert done["output"] == "s3://models/out/large.bin"
    head = client.head_object(Bucket="models", Key="out/large.bin")
    assert head["ContentLength"] == size
    assert head["ETag"].strip('"').endswith("-2")  # S3's ETag of an object of two parts
    body = client.get_object(Bucket="models", Key="out/large.bin")["Body"].read()
    assert body[:MiB] == BLOCK and body[-5:] == BLOCK[:5]


def test_presigned_output_urls(serve, s3):
    store = s3()
    store.client().create_bucket(Bucket="out")
    server = serve("files_out", "--upload-url", "s3://out/runs/",
                   env=store.env(COGSERVE_UPLOAD_PRESIGN="600"))
    url = _predict(server, mode="named", size=100, name="r.txt")["output"]
    assert url.startswith(f"{store.url}/out/runs/r.txt?") and "X-Amz-Signature=" in url
    assert httpx.get(url).content == BLOCK[:100]


def test_denied_credentials_fail_reads_and_uploads_cleanly(serve, s3):
    store = s3(auth=True)
    client = store.client()
    client.create_bucket(Bucket="private")
    client.put_object(Bucket="private", Key="in.txt", Body=b"secret")
    wrong = store.env(AWS_SECRET_ACCESS_KEY="not-the-secret")
    server = serve("files_out", "--upload-url", "s3://private/out/", env=wrong)
    done = _predict(server, mode="echo", src="s3://private/in.txt")
    assert done["status"] == "failed"
    assert "s3://private/in.txt" in done["error"] and "access denied" in done["error"]
    done = _predict(server, mode="named", size=10, name="o.txt")
    assert done["status"] == "failed"
    assert "uploading o.txt to s3://private/out/o.txt failed" in done["error"]
    assert "Signature" in done["error"] or "denied" in done["error"].lower()
    # the same server with the right key reads it (the key decides, nothing else)
    right = serve("files_out", env=store.env())
    assert _data(_predict(right, mode="echo", src="s3://private/in.txt")["output"]) \
        == b"secret"


def test_an_unreachable_store_fails_the_prediction_within_the_timeout(serve):
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    server = serve("files_out", "--upload-url", "s3://b/out/", env={
        "AWS_ENDPOINT_URL": closed, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_REGION": "us-east-1", "COGSERVE_DOWNLOAD_TIMEOUT": "2"})
    done = _predict(server, mode="echo", src="s3://b/in.txt")
    assert done["status"] == "failed" and "reading s3://b/in.txt failed" in done["error"]
    done = _predict(server, mode="named", size=10, name="o.txt")
    assert done["status"] == "failed" and "uploading o.txt to s3://b/out/o.txt" in done["error"]
    assert server.health()["status"] == "READY"
