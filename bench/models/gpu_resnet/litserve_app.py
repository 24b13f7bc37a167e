"""The GPU scenario's model on LitServe with its batching on (the peer of batched.py).

Run as `python litserve_app.py --port N --workers W`; POST /predict with the body
cogserve and Cog get ({"input": {"image": "data:image/jpeg;base64,..."}}) answers
{"output": {"classes": [...], "probabilities": [...]}}. Batches of up to 32 gathered for
at most 2 ms, the limits batched.py declares; W inference workers on the one device.

With `--form`, POST /predict takes the image as a multipart/form-data upload instead
(`curl -F image=@cat.jpg`), as LitServe's users send files: `decode_request` annotated
with starlette's `Request` makes LitServe parse the form itself (`await request.form()`,
python-multipart, in its server process) and hand the worker the parsed form, whose
`image` part's bytes go through the same decode the data URL's do.
"""

import argparse
import base64
import pathlib
import sys

import litserve as ls
from starlette.requests import Request

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


class ResNetForm(ResNet):
    """The same model for a form upload: the annotation is what LitServe reads (0.2.19's
    server: a `Request` parameter gets `await request.form()` for a form body)."""

    def decode_request(self, request: Request):  # noqa: ANN201
        return decode(request["image"].file.read())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--form", action="store_true",
                        help="the image as a multipart/form-data upload, not a data URL")
    args = parser.parse_args()
    api = (ResNetForm if args.form else ResNet)(max_batch_size=MAX_BATCH, batch_timeout=WAIT_S)
    # "auto": CUDA where torch sees a GPU (LitServe's own detection, as a user runs it)
    server = ls.LitServer(api, accelerator="cpu" if standin() else "auto", devices=1,
                          workers_per_device=args.workers, timeout=60)
    server.run(host="127.0.0.1", port=args.port, generate_client_file=False)
