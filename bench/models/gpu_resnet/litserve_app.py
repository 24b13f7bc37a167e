"""The GPU scenario's model on LitServe with its batching on (the peer of batched.py).

Run as `python litserve_app.py --port N --workers W`; POST /predict with the body
cogserve and Cog get ({"input": {"image": "data:image/jpeg;base64,..."}}) answers
{"output": {"classes": [...], "probabilities": [...]}}. Batches of up to 32 gathered for
at most 2 ms, the limits batched.py declares; W inference workers on the one device.
"""

import argparse
import base64
import pathlib
import sys

import litserve as ls

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from net import Classifier, decode, standin  # noqa: E402

MAX_BATCH, WAIT_S = 32, 0.002


class ResNet(ls.LitAPI):
    def setup(self, device: str) -> None:
        self.net = Classifier()

    def decode_request(self, request: dict):  # noqa: ANN201
        url = (request.get("input") or {})["image"]
        return decode(base64.b64decode(url.partition(",")[2]))

    def batch(self, inputs: list) -> list:
        return list(inputs)

    def predict(self, images: list) -> list:
        return self.net.top5(images)

    def unbatch(self, output: list) -> list:
        return output

    def encode_response(self, output: dict) -> dict:
        return {"output": output}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    api = ResNet(max_batch_size=MAX_BATCH, batch_timeout=WAIT_S)
    # "auto": CUDA where torch sees a GPU (LitServe's own detection, as a user runs it)
    server = ls.LitServer(api, accelerator="cpu" if standin() else "auto", devices=1,
                          workers_per_device=args.workers, timeout=60)
    server.run(host="127.0.0.1", port=args.port, generate_client_file=False)
