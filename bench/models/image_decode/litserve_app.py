"""The decode model on LitServe with its batching on (the CPU proxy's peer).

Run as `python litserve_app.py --port N`; POST /predict {"input": {"image": "data:..."}}
answers {"output": "224x224"}, the body and answer cogserve gets. One worker process,
batches of up to 32 gathered for at most 2 ms: the limits the cogserve model declares.
The data URL's base64 is decoded in decode_request (LitServe's API server process, as a
LitServe user would write it); the JPEG decode is predict()'s, as run()'s is cogserve's.

With BENCH_FORM=1 (scenario 12e) the image comes as a multipart upload instead, its part
named `image`: decode_request takes LitServe's parsed request (the form, or JSON for the
`stats` request) and reads the uploaded file's bytes.
"""

import argparse
import base64
import os
import pathlib
import sys

import litserve as ls

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from decode import Meter  # noqa: E402

MAX_BATCH, WAIT_S = 32, 0.002


class BatchedDecode(ls.LitAPI):
    def setup(self, device: str) -> None:
        self.meter = Meter()

    def decode_request(self, request: dict) -> bytes | None:
        fields = request.get("input") or {}
        if fields.get("stats"):
            return None
        return base64.b64decode(fields["image"].partition(",")[2])

    def batch(self, inputs: list) -> list:
        return list(inputs)

    def predict(self, blobs: list) -> list[str]:
        if any(b is None for b in blobs):
            return [self.meter.report() if b is None else "" for b in blobs]
        return self.meter.decode_bytes(blobs)

    def unbatch(self, output: list[str]) -> list[str]:
        return output

    def encode_response(self, output: str) -> dict:
        return {"output": output}


class BatchedFormDecode(BatchedDecode):
    # no annotation: LitServe then hands over the form it parsed (or the JSON document)
    def decode_request(self, request):  # type: ignore[no-untyped-def]
        if isinstance(request, dict):
            return super().decode_request(request)
        return request["image"].file.read()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    kind = BatchedFormDecode if os.environ.get("BENCH_FORM") == "1" else BatchedDecode
    api = kind(max_batch_size=MAX_BATCH, batch_timeout=WAIT_S)
    server = ls.LitServer(api, accelerator="cpu", devices=1, workers_per_device=1, timeout=60)
    server.run(host="127.0.0.1", port=args.port, generate_client_file=False)
