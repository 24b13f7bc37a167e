"""The same model on LitServe (scenario 9): 2 worker processes on one CPU "device".

Run as `python litserve_app.py --port N`; POST /predict {"input": {"n": ...}} answers
{"output": ...}, the body and answer cogserve and Cog get.
"""

import argparse
import pathlib
import sys

import litserve as ls

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from work import ITERATIONS, work  # noqa: E402


class CPUWork(ls.LitAPI):
    def setup(self, device: str) -> None:
        pass

    def decode_request(self, request: dict) -> int:
        return int((request.get("input") or {}).get("n", ITERATIONS))

    def predict(self, n: int) -> int:
        return work(n)

    def encode_response(self, output: int) -> dict:
        return {"output": output}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    server = ls.LitServer(CPUWork(), accelerator="cpu", devices=1, workers_per_device=2,
                          timeout=60)
    server.run(host="127.0.0.1", port=args.port, generate_client_file=False)
