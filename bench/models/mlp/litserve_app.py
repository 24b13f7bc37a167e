"""The MLP on LitServe with its batching on (the batching scenario's peer).

Run as `python litserve_app.py --port N`; POST /predict {"input": {"seed": ...}} answers
{"output": ...}, the body and answer cogserve and Cog get. One worker process, batches
of up to 16 gathered for at most 5 ms: the limits the cogserve model declares.
"""

import argparse
import pathlib
import sys

import litserve as ls

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from mlp import MLP  # noqa: E402

MAX_BATCH, WAIT_S = 16, 0.005


class BatchedMLP(ls.LitAPI):
    def setup(self, device: str) -> None:
        self.mlp = MLP()

    def decode_request(self, request: dict) -> int:
        return int((request.get("input") or {}).get("seed", 0))

    def batch(self, inputs: list[int]) -> list[int]:
        return list(inputs)

    def predict(self, seeds: list[int]) -> list[int]:
        return self.mlp.classify(seeds)

    def unbatch(self, output: list[int]) -> list[int]:
        return output

    def encode_response(self, output: int) -> dict:
        return {"output": output}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    api = BatchedMLP(max_batch_size=MAX_BATCH, batch_timeout=WAIT_S)
    server = ls.LitServer(api, accelerator="cpu", devices=1, workers_per_device=1, timeout=60)
    server.run(host="127.0.0.1", port=args.port, generate_client_file=False)
