"""The Open Inference Protocol (V2 REST) over real HTTP, on the same runtime as Cog's API.

Raw HTTP for every endpoint and error, a model that echoes every datatype back (JSON,
nested, binary), and the real `tritonclient` talking to the server.
"""

from __future__ import annotations

import base64
import pathlib
import struct

import httpx
import numpy as np
import orjson
import pytest
from harness import write_model

ECHO = "/v2/models/echo-tensors"  # cog.yaml image "registry.example.com/team/echo-tensors:1.2"
SCALARS = "/v2/models/v2_scalars"  # no image: the folder's name

# datatype -> (numpy dtype, values that hit the edges of its range)
ROUND_TRIP = {
    "BOOL": (np.bool_, [True, False, True, True]),
    "UINT8": (np.uint8, [0, 1, 254, 255]),
    "UINT16": (np.uint16, [0, 1, 65534, 65535]),
    "UINT32": (np.uint32, [0, 1, 2**32 - 2, 2**32 - 1]),
    "UINT64": (np.uint64, [0, 1, 2**64 - 2, 2**64 - 1]),
    "INT8": (np.int8, [-128, -1, 0, 127]),
    "INT16": (np.int16, [-(2**15), -1, 0, 2**15 - 1]),
    "INT32": (np.int32, [-(2**31), -1, 0, 2**31 - 1]),
    "INT64": (np.int64, [-(2**63), -1, 0, 2**63 - 1]),
    "FP16": (np.float16, [-65504.0, -0.5, 0.0, 65504.0]),
    "FP32": (np.float32, [-3.4028234663852886e38, -1.5, 0.25, 3.4028234663852886e38]),
    "FP64": (np.float64, [-1.7976931348623157e308, -1e-300, 0.1, 1.7976931348623157e308]),
    "BYTES": (np.object_, ["héllo", "", "a,b", "z" * 300]),
}


def infer(server, body, path=ECHO, **kwargs) -> httpx.Response:
    return server.client.post(f"{path}/infer", json=body, **kwargs)


def error_of(response: httpx.Response, status: int = 400) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    return body["error"]


def binary_request(inputs: list[tuple[str, str, list[int], bytes]], **extra) -> tuple[bytes, dict]:
    """A request in the binary tensor data extension: JSON header, then raw tensors."""
    doc = {"inputs": [{"name": n, "datatype": d, "shape": s,
                       "parameters": {"binary_data_size": len(raw)}}
                      for n, d, s, raw in inputs], **extra}
    head = orjson.dumps(doc)
    return head + b"".join(raw for *_, raw in inputs), {
        "Inference-Header-Content-Length": str(len(head)),
        "Content-Type": "application/octet-stream",
    }


def split_binary_response(response: httpx.Response) -> tuple[dict, dict[str, bytes]]:
    size = int(response.headers["inference-header-content-length"])
    head = orjson.loads(response.content[:size])
    blobs, pos = {}, size
    for out in head["outputs"]:
        if "data" in out:
            continue
        n = out["parameters"]["binary_data_size"]
        blobs[out["name"]] = response.content[pos:pos + n]
        pos += n
    assert pos == len(response.content)
    return head, blobs


def tensor_files(server) -> list[str]:
    """Spill files of packed tensors left in the server's temporary folder (the worker's TMPDIR)."""
    (worker,) = server.worker_pids()
    environ = pathlib.Path(f"/proc/{worker}/environ").read_bytes().split(b"\0")
    tmp = next(e for e in environ if e.startswith(b"TMPDIR=")).split(b"=", 1)[1].decode()
    return sorted(p.name for p in pathlib.Path(tmp).glob("tensor-*"))


def bytes_tensor(items: list[bytes]) -> bytes:
    return b"".join(struct.pack("<I", len(b)) + b for b in items)


def from_blob(datatype: str, blob: bytes) -> list:
    if datatype == "BYTES":
        out, pos = [], 0
        while pos < len(blob):
            (n,) = struct.unpack_from("<I", blob, pos)
            out.append(blob[pos + 4:pos + 4 + n].decode())
            pos += 4 + n
        return out
    return np.frombuffer(blob, dtype=ROUND_TRIP[datatype][0]).tolist()


# ---------------------------------------------------------------- server endpoints


def test_server_metadata_health_and_routing(serve):
    server = serve("v2_echo")
    c = server.client
    meta = c.get("/v2").json()
    assert meta["name"] == "cogserve" and meta["version"]
    assert "binary_tensor_data" in meta["extensions"]
    r = c.get("/v2/health/live")
    assert (r.status_code, r.json()) == (200, {"live": True})
    r = c.get("/v2/health/ready")
    assert (r.status_code, r.json()) == (200, {"ready": True})
    r = c.get(f"{ECHO}/ready")
    assert (r.status_code, r.json()) == (200, {"name": "echo-tensors", "ready": True})
    assert "unknown model 'nope'" in error_of(c.get("/v2/models/nope"), 404)
    assert "unknown model" in error_of(c.post("/v2/models/nope/infer", json={}), 404)
    assert "no versions" in error_of(c.get(f"{ECHO}/versions/1"), 404)
    assert error_of(c.get("/v2/elsewhere"), 404) == "Not Found"
    assert error_of(c.get(f"{ECHO}/infer"), 405).startswith("Method Not Allowed")
    assert c.post("/v2/health/live").status_code == 405


GATED = """
import os, time
from cog import BaseRunner

class Runner(BaseRunner):
    def setup(self) -> None:
        while not os.path.exists(os.environ["GATE_FILE"]):  # setup ends when the test says
            time.sleep(0.02)

    def run(self, x: int) -> int:
        return x + 1
"""


def test_readiness_follows_setup_and_liveness_fails_when_setup_failed(serve, tmp_path):
    gate = tmp_path / "gate"
    slow = serve(write_model(tmp_path / "gated", GATED), wait="STARTING",
                 env={"GATE_FILE": str(gate)})
    r = slow.client.get("/v2/health/ready")
    assert (r.status_code, r.json()) == (503, {"ready": False})
    assert slow.client.get("/v2/models/gated/ready").json() == {"name": "gated", "ready": False}
    r = slow.client.get("/v2/health/live")
    assert (r.status_code, r.json()) == (200, {"live": True})
    assert "Setup has not finished" in error_of(
        infer(slow, {"inputs": [tensor("x", "INT64", [1], [1])]}, "/v2/models/gated"), 503)
    gate.write_text("go")
    slow.wait_for("READY")
    r = slow.client.get("/v2/health/ready")
    assert (r.status_code, r.json()) == (200, {"ready": True})
    out = infer(slow, {"inputs": [tensor("x", "INT64", [1], [1])]}, "/v2/models/gated").json()
    assert out["outputs"] == [{"name": "output", "datatype": "INT64", "shape": [1], "data": [2]}]

    failed = serve("setup_fails", wait="SETUP_FAILED")
    r = failed.client.get("/v2/health/live")
    assert (r.status_code, r.json()) == (503, {"live": False})
    assert failed.client.get("/v2/health/ready").status_code == 503
    r = failed.client.get("/v2/models/setup_fails/ready")
    assert (r.status_code, r.json()) == (503, {"name": "setup_fails", "ready": False})
    r = failed.client.post("/v2/models/setup_fails/infer", json={"inputs": []})
    assert "Setup failed" in error_of(r, 503)


def test_model_metadata_maps_cog_types_to_tensors(serve):
    server = serve("v2_scalars")
    meta = server.client.get(SCALARS).json()
    assert meta["name"] == "v2_scalars" and meta["platform"] == "python_cogserve"
    assert "versions" not in meta
    assert meta["inputs"] == [
        {"name": "text", "datatype": "BYTES", "shape": [1]},
        {"name": "count", "datatype": "INT64", "shape": [1]},
        {"name": "scale", "datatype": "FP64", "shape": [1]},
        {"name": "flag", "datatype": "BOOL", "shape": [1]},
        {"name": "values", "datatype": "FP64", "shape": [-1]},
        {"name": "mode", "datatype": "BYTES", "shape": [1]},
        {"name": "doc", "datatype": "BYTES", "shape": [1]},
        {"name": "extra", "datatype": "BYTES", "shape": [1]},
        {"name": "sleep", "datatype": "FP64", "shape": [1]},
    ]
    assert meta["outputs"] == [
        {"name": "text", "datatype": "BYTES", "shape": [1]},
        {"name": "total", "datatype": "FP64", "shape": [1]},
        {"name": "count", "datatype": "INT64", "shape": [1]},
        {"name": "flag", "datatype": "BOOL", "shape": [1]},
        {"name": "numpy_loaded", "datatype": "BOOL", "shape": [1]},
        {"name": "file_size", "datatype": "INT64", "shape": [1]},
        {"name": "extra_keys", "datatype": "BYTES", "shape": [-1]},
    ]


def test_tensor_metadata_and_the_schema_extension(serve):
    server = serve("v2_echo")
    meta = server.client.get(ECHO).json()
    inputs = {t["name"]: t for t in meta["inputs"]}
    for name in ROUND_TRIP:
        assert inputs[name] == {"name": name, "datatype": name, "shape": [-1]}
    assert inputs["matrix"] == {"name": "matrix", "datatype": "FP32", "shape": [-1, 3]}
    assert inputs["anything"]["shape"] == [-1]
    outputs = {t["name"]: t for t in meta["outputs"]}
    assert outputs["FP16"]["datatype"] == "FP16" and outputs["matrix_sum"]["datatype"] == "FP64"
    prop = server.client.get("/openapi.json").json()["components"]["schemas"]["Input"][
        "properties"]["matrix"]
    assert prop["x-cogserve-tensor"] == {"datatype": "FP32", "shape": [-1, 3]}


def test_versioned_model_name_from_the_flag(serve):
    server = serve("v2_scalars", "--model-name", "shouty", "--model-version", "7")
    c = server.client
    assert c.get("/v2/models/shouty").json()["versions"] == ["7"]
    assert c.get("/v2/models/shouty/versions/7/ready").json() == {"name": "shouty",
                                                                   "ready": True}
    assert "its version is '7'" in error_of(c.get("/v2/models/shouty/versions/8"), 404)
    assert error_of(c.get(SCALARS), 404)
    body = {"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["v"]}]}
    for path in ("/v2/models/shouty", "/v2/models/shouty/versions/7"):
        out = infer(server, body, path).json()
        assert out["model_name"] == "shouty" and out["model_version"] == "7"
    assert error_of(infer(server, body, "/v2/models/shouty/versions/6"), 404)


# ---------------------------------------------------------------- datatypes


@pytest.mark.parametrize("nested", [False, True], ids=["flat", "nested"])
def test_every_datatype_round_trips_as_json(serve, nested):
    server = serve("v2_echo")
    inputs = []
    for name, (_, values) in ROUND_TRIP.items():
        data = [values[:2], values[2:]] if nested else values
        inputs.append({"name": name, "datatype": name, "shape": [2, 2], "data": data})
    r = infer(server, {"id": "req-1", "inputs": inputs})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["id"] == "req-1" and body["model_name"] == "echo-tensors"
    assert "model_version" not in body
    outputs = {o["name"]: o for o in body["outputs"]}
    for name, (dtype, values) in ROUND_TRIP.items():
        assert outputs[name]["datatype"] == name
        assert outputs[name]["shape"] == [2, 2]
        assert outputs[name]["data"] == values, name
        if name != "BYTES":
            assert f"{name}:{np.dtype(dtype)}:[2, 2]" in outputs["dtypes"]["data"][0]


def test_every_datatype_round_trips_as_binary(serve):
    server = serve("v2_echo")
    inputs = []
    for name, (dtype, values) in ROUND_TRIP.items():
        raw = bytes_tensor([v.encode() for v in values]) if name == "BYTES" \
            else np.array(values, dtype=dtype).tobytes()
        inputs.append((name, name, [4], raw))
    body, headers = binary_request(inputs, parameters={"binary_data_output": True})
    r = server.client.post(f"{ECHO}/infer", content=body, headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/octet-stream"
    head, blobs = split_binary_response(r)
    outputs = {o["name"]: o for o in head["outputs"]}
    for name, (_, values) in ROUND_TRIP.items():
        assert outputs[name]["shape"] == [4] and "data" not in outputs[name]
        assert from_blob(name, blobs[name]) == values, name
    assert "BYTES:object:[4]" in from_blob("BYTES", blobs["dtypes"])[0]


def test_binary_input_json_output_and_per_output_choice(serve):
    server = serve("v2_echo")
    raw = np.arange(6, dtype=np.float32).tobytes()
    body, headers = binary_request(
        [("matrix", "FP32", [2, 3], raw), ("INT16", "INT16", [3],
                                           np.array([1, -2, 3], np.int16).tobytes())],
        outputs=[{"name": "matrix_sum"}, {"name": "INT16", "parameters": {"binary_data": True}}])
    r = server.client.post(f"{ECHO}/infer", content=body, headers=headers)
    head, blobs = split_binary_response(r)
    assert [o["name"] for o in head["outputs"]] == ["matrix_sum", "INT16"]
    assert head["outputs"][0]["data"] == [15.0]
    assert np.frombuffer(blobs["INT16"], np.int16).tolist() == [1, -2, 3]


def test_large_tensor_binary_and_json(serve):
    server = serve("v2_echo")
    values = np.linspace(-1, 1, 999_999, dtype=np.float32)
    expected = float(values.sum())
    body, headers = binary_request([("matrix", "FP32", [333_333, 3], values.tobytes())],
                                   outputs=[{"name": "matrix_sum"}])
    r = server.client.post(f"{ECHO}/infer", content=body, headers=headers)
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"][0] == pytest.approx(expected, abs=1e-3)
    assert tensor_files(server) == []  # the 4 MB went through a file the worker removed
    r = infer(server, {"inputs": [{"name": "matrix", "datatype": "FP32", "shape": [333_333, 3],
                                   "data": values.tolist()}],
                       "outputs": [{"name": "matrix_sum"}, {"name": "dtypes"}]})
    assert r.status_code == 200, r.text
    out = {o["name"]: o["data"][0] for o in r.json()["outputs"]}
    assert out["matrix_sum"] == pytest.approx(expected, abs=1e-3)
    assert out["dtypes"] == "matrix:float32:[333333, 3]"


def test_untyped_ndarray_keeps_the_clients_datatype(serve):
    server = serve("v2_echo")
    for datatype, dtype in (("UINT8", "uint8"), ("FP64", "float64")):
        r = infer(server, {"inputs": [{"name": "anything", "datatype": datatype,
                                       "shape": [1, 2, 2], "data": [1, 2, 3, 4]}],
                           "outputs": [{"name": "dtypes"}]})
        assert r.json()["outputs"][0]["data"] == [f"anything:{dtype}:[1, 2, 2]"]


def test_cog_api_sends_tensors_as_nested_lists(serve):
    server = serve("v2_echo")
    body = server.predict(matrix=[[1, 2, 3], [4, 5, 6]], INT8=[[-1, 2]]).json()
    assert body["status"] == "succeeded", body
    assert body["output"]["matrix_sum"] == 21.0 and body["output"]["INT8"] == [[-1, 2]]
    body = server.predict(matrix=[[1, 2], [3, 4]]).json()
    assert body["status"] == "failed"
    assert "shape [2, 2] does not match the declared shape [-1, 3]" in body["error"]
    assert server.predict(matrix="nope").status_code == 422
    # the packed form is the V2 routes' own: a Cog client cannot point the worker at a file
    packed = {"__cogserve_tensor__": {"datatype": "FP32", "shape": [1, 3], "file": "/etc/hosts"}}
    assert server.predict(matrix=packed).status_code == 422


# ---------------------------------------------------------------- inference errors


def tensor(name, datatype, shape, data):
    return {"name": name, "datatype": datatype, "shape": shape, "data": data}


@pytest.mark.parametrize("inputs, expected", [
    ([tensor("bogus", "INT8", [1], [1])], "input 'bogus': the model has no such input"),
    ([tensor("INT8", "INT9", [1], [1])], "input 'INT8': unknown datatype 'INT9'"),
    ([tensor("INT8", "INT8", [3], [1, 2])], "input 'INT8': shape [3] has 3 elements but data "
                                            "has 2"),
    ([tensor("INT8", "INT8", [-1], [1])], "input 'INT8': shape must be a list of non-negative"),
    ([tensor("matrix", "FP32", [2, 2], [1, 2, 3, 4])], "input 'matrix': shape [2, 2] does not "
                                                       "match the model's [-1, 3]"),
    ([tensor("matrix", "FP64", [1, 3], [1, 2, 3])], "input 'matrix': datatype FP64 does not "
                                                    "match the model's FP32"),
    ([tensor("INT8", "INT8", [2], [1, 128])], "input 'INT8': a value is out of range for INT8 "
                                              "(-128..127)"),
    ([tensor("UINT64", "UINT64", [1], [-1])], "input 'UINT64': a value is out of range for "
                                              "UINT64"),
    ([tensor("FP32", "FP32", [1], [1e39])], "input 'FP32': a value is out of range for FP32"),
    ([tensor("FP16", "FP16", [1], [70000.0])], "input 'FP16': a value is out of range for FP16"),
    ([tensor("INT32", "INT32", [2], [1, "x"])], "input 'INT32': 'x' is not a INT32 value"),
    ([tensor("INT32", "INT32", [1], [1.5])], "input 'INT32': 1.5 is not a INT32 value"),
    ([tensor("BOOL", "BOOL", [1], [1])], "input 'BOOL': 1 is not a BOOL"),
    ([tensor("BYTES", "BYTES", [1], [5])], "input 'BYTES': 5 is not a BYTES value"),
    ([tensor("INT8", "INT8", [2, 2], [[1, 2], 3, 4])], "input 'INT8': data mixes nested"),
    ([tensor("INT8", "INT8", [1], [1]), tensor("INT8", "INT8", [1], [1])],
     "input 'INT8': given twice"),
    ([{"name": "INT8", "datatype": "INT8", "shape": [1]}], "input 'INT8': has no data"),
])
def test_tensor_errors_name_the_tensor(serve, inputs, expected):
    server = serve("v2_echo")
    assert expected in error_of(infer(server, {"inputs": inputs}))


def test_request_level_errors(serve):
    server = serve("v2_echo")
    c = server.client
    assert "not valid JSON" in error_of(c.post(f"{ECHO}/infer", content=b"{"))
    assert "no inputs list" in error_of(c.post(f"{ECHO}/infer", json={"id": "x"}))
    assert "id must be a string" in error_of(infer(server, {"id": 5, "inputs": []}))
    assert "output 'nope': the model has no such output" in error_of(
        infer(server, {"inputs": [], "outputs": [{"name": "nope"}]}))
    raw = np.zeros(3, np.float32).tobytes()
    body, headers = binary_request([("FP32", "FP32", [4], raw)])
    assert "needs 16 bytes, got binary_data_size 12" in error_of(
        c.post(f"{ECHO}/infer", content=body, headers=headers))
    body, headers = binary_request([("FP32", "FP32", [3], raw)])
    assert "runs past the end" in error_of(
        c.post(f"{ECHO}/infer", content=body[:-1], headers=headers))
    assert "no input claims" in error_of(
        c.post(f"{ECHO}/infer", content=body + b"xx", headers=headers))
    headers["Inference-Header-Content-Length"] = "999999"
    assert "Inference-Header-Content-Length" in error_of(
        c.post(f"{ECHO}/infer", content=body, headers=headers))
    body, headers = binary_request([("BYTES", "BYTES", [2], bytes_tensor([b"a"]))])
    assert "BYTES data has 1" in error_of(c.post(f"{ECHO}/infer", content=body,
                                                 headers=headers))


# ---------------------------------------------------------------- plain Cog inputs


def text_input(value="abc"):
    return tensor("text", "BYTES", [1], [value])


def outputs_of(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    return {o["name"]: o for o in response.json()["outputs"]}


def test_scalars_defaults_parameters_and_no_numpy(serve):
    server = serve("v2_scalars")
    out = outputs_of(infer(server, {"inputs": [text_input()]}, SCALARS))
    assert out["text"] == {"name": "text", "datatype": "BYTES", "shape": [1], "data": ["ABC"]}
    assert out["count"]["data"] == [1] and out["total"]["data"] == [0.0]
    assert out["flag"]["data"] == [True]
    assert out["numpy_loaded"]["data"] == [False]  # a model without tensors never imports it
    assert "file_size" not in out and "extra_keys" not in out  # None outputs are left out
    r = infer(server, {"inputs": [
        text_input("Hi"), tensor("count", "INT32", [1], [2]), tensor("flag", "BOOL", [1], [True]),
        tensor("values", "FP32", [2, 2], [[1, 2], [3, 4.5]]), tensor("mode", "BYTES", [1],
                                                                     ["lower"]),
        tensor("extra", "BYTES", [1], ['{"b": 1, "a": 2}']),
    ], "parameters": {"scale": 2.0, "unrelated": "ignored"}}, SCALARS)
    out = outputs_of(r)
    assert out["text"]["data"] == ["hihi"] and out["count"]["data"] == [2]
    assert out["total"]["data"] == [21.0] and out["flag"]["data"] == [False]
    assert out["extra_keys"] == {"name": "extra_keys", "datatype": "BYTES", "shape": [2],
                                 "data": ["a", "b"]}
    r = infer(server, {"inputs": [text_input()], "outputs": [{"name": "count"}]}, SCALARS)
    assert [o["name"] for o in r.json()["outputs"]] == ["count"]


def test_file_input_as_url_or_raw_bytes(serve):
    server = serve("v2_scalars")
    url = "data:text/plain;base64," + base64.b64encode(b"12345").decode()
    out = outputs_of(infer(server, {"inputs": [text_input(), tensor("doc", "BYTES", [1],
                                                                    [url])]}, SCALARS))
    assert out["file_size"]["data"] == [5]
    payload = bytes(range(256)) * 4
    body, headers = binary_request([("text", "BYTES", [1], bytes_tensor([b"x"])),
                                    ("doc", "BYTES", [1], bytes_tensor([payload]))])
    r = server.client.post(f"{SCALARS}/infer", content=body, headers=headers)
    assert outputs_of(r)["file_size"]["data"] == [1024]


def test_scalar_errors_and_model_failure(serve):
    server = serve("v2_scalars")
    assert "input 'text': missing (a required input)" in error_of(
        infer(server, {"inputs": []}, SCALARS))
    assert "input 'count': 11 is greater than the maximum of 10" in error_of(
        infer(server, {"inputs": [text_input(), tensor("count", "INT64", [1], [11])]}, SCALARS))
    assert "input 'mode': \"loud\" is not one of" in error_of(
        infer(server, {"inputs": [text_input(), tensor("mode", "BYTES", [1], ["loud"])]},
              SCALARS))
    assert "input 'count': takes one element (shape [1]); got shape [2]" in error_of(
        infer(server, {"inputs": [text_input(), tensor("count", "INT64", [2], [1, 2])]},
              SCALARS))
    assert "input 'count': datatype FP32 does not fit this input (expected INT64)" in error_of(
        infer(server, {"inputs": [text_input(), tensor("count", "FP32", [1], [1.0])]}, SCALARS))
    assert "input 'text': datatype INT64" in error_of(
        infer(server, {"inputs": [tensor("text", "INT64", [1], [1])]}, SCALARS))
    message = error_of(infer(server, {"inputs": [text_input("x"), tensor("mode", "BYTES", [1],
                                                                         ["fail"])]}, SCALARS))
    assert message == ("inference failed: Prediction failed: Prediction failed: RuntimeError: "
                       "the model failed on 'x'")  # the prediction's error, worded as Cog's
    assert outputs_of(infer(server, {"inputs": [text_input()]}, SCALARS))["text"]["data"] == [
        "ABC"]


def test_busy_slot_is_an_immediate_error_not_a_hang(serve):
    server = serve("v2_scalars")
    r = server.client.post("/predictions", json={"input": {"text": "a", "sleep": 30}},
                           headers={"Prefer": "respond-async"})
    assert r.status_code == 202
    busy = infer(server, {"inputs": [text_input()]}, SCALARS, timeout=10)
    assert "all prediction slots busy" in error_of(busy, 409)
    assert server.client.get("/v2/health/ready").status_code == 200  # BUSY is still ready
    server.client.post(f"/predictions/{r.json()['id']}/cancel")


SLOW_SUM = """
import time
import numpy as np
from cog import BaseRunner, Tensor

class Runner(BaseRunner):
    def run(self, x: Tensor[np.float32], sleep: float = 0.0) -> float:
        time.sleep(sleep)
        return float(x.sum())
"""


def test_refused_large_tensors_leave_no_file(serve, tmp_path):
    server = serve(write_model(tmp_path / "slow_sum", SLOW_SUM))
    path = "/v2/models/slow_sum"
    raw = np.ones(300_000, np.float32).tobytes()
    body, headers = binary_request([("x", "FP32", [300_000], raw)])
    ok = server.client.post(f"{path}/infer", content=body, headers=headers)
    assert outputs_of(ok)["output"]["data"] == [300_000.0]
    refused, refused_headers = binary_request([("x", "FP32", [300_000], raw)],
                                              outputs=[{"name": "nope"}])
    assert "no such output" in error_of(server.client.post(f"{path}/infer", content=refused,
                                                           headers=refused_headers))
    slow = server.client.post("/predictions", json={"input": {"x": [1.0], "sleep": 30}},
                              headers={"Prefer": "respond-async"})
    assert slow.status_code == 202
    busy = server.client.post(f"{path}/infer", content=body, headers=headers)
    assert "busy" in error_of(busy, 409)
    assert tensor_files(server) == []
    server.client.post(f"/predictions/{slow.json()['id']}/cancel")


def test_iterator_and_file_outputs(serve):
    server = serve("iter_plain")
    assert server.client.get("/v2/models/iter_plain").json()["outputs"] == [
        {"name": "output", "datatype": "BYTES", "shape": [-1]}]
    r = infer(server, {"inputs": [tensor("n", "INT64", [1], [2])]}, "/v2/models/iter_plain")
    assert outputs_of(r)["output"] == {"name": "output", "datatype": "BYTES", "shape": [2],
                                       "data": ["p0", "p1"]}
    files = serve("files_out")
    path = "/v2/models/files_out"
    out = outputs_of(infer(files, {"inputs": [tensor("size", "INT64", [1], [5])]}, path))
    assert out["output"]["data"] == ["data:text/plain;base64," + base64.b64encode(b"01234")
                                     .decode()]
    r = infer(files, {"inputs": [tensor("size", "INT64", [1], [5])],
                      "parameters": {"binary_data_output": True}}, path)
    head, blobs = split_binary_response(r)
    assert head["outputs"][0]["datatype"] == "BYTES"
    assert from_blob("BYTES", blobs["output"]) == ["01234"]  # the file's bytes, not a URL


# ---------------------------------------------------------------- the real client


def test_tritonclient_drives_the_server(serve):
    import tritonclient.http as triton
    from tritonclient.utils import InferenceServerException

    server = serve("v2_echo")
    client = triton.InferenceServerClient(f"127.0.0.1:{server.port}")
    try:
        assert client.is_server_live() and client.is_server_ready()
        assert client.is_model_ready("echo-tensors")
        assert not client.is_model_ready("other")
        meta = client.get_model_metadata("echo-tensors")
        assert {"name": "matrix", "datatype": "FP32", "shape": [-1, 3]} in meta["inputs"]
        assert "binary_tensor_data" in client.get_server_metadata()["extensions"]

        matrix = np.arange(12, dtype=np.float32).reshape(4, 3)
        words = np.array([b"alpha", "βeta".encode()], dtype=np.object_)
        for binary in (False, True):
            inputs = [triton.InferInput("matrix", [4, 3], "FP32"),
                      triton.InferInput("BYTES", [2], "BYTES"),
                      triton.InferInput("FP16", [2], "FP16")]
            inputs[0].set_data_from_numpy(matrix, binary_data=binary)
            inputs[1].set_data_from_numpy(words, binary_data=binary)
            inputs[2].set_data_from_numpy(np.array([0.5, -2], np.float16), binary_data=binary)
            outputs = [triton.InferRequestedOutput(n, binary_data=binary)
                       for n in ("matrix_sum", "BYTES", "FP16")]
            result = client.infer("echo-tensors", inputs, outputs=outputs, request_id="t1")
            assert result.get_response()["id"] == "t1"
            assert result.as_numpy("matrix_sum").tolist() == [66.0]
            assert result.as_numpy("FP16").dtype == np.float16
            assert result.as_numpy("FP16").tolist() == [0.5, -2.0]
            got = [v if isinstance(v, bytes) else v.encode() for v in result.as_numpy("BYTES")]
            assert got == [b"alpha", "βeta".encode()]
        # no outputs named: tritonclient asks for all of them in binary
        inputs = [triton.InferInput("UINT64", [2], "UINT64")]
        inputs[0].set_data_from_numpy(np.array([2**64 - 1, 7], np.uint64))
        result = client.infer("echo-tensors", inputs)
        assert result.as_numpy("UINT64").tolist() == [2**64 - 1, 7]
        # request compression
        inputs = [triton.InferInput("INT8", [2], "INT8")]
        inputs[0].set_data_from_numpy(np.array([-5, 5], np.int8))
        result = client.infer("echo-tensors", inputs, request_compression_algorithm="gzip")
        assert result.as_numpy("INT8").tolist() == [-5, 5]
        bad = [triton.InferInput("matrix", [1, 3], "FP64")]
        bad[0].set_data_from_numpy(np.ones((1, 3)))
        with pytest.raises(InferenceServerException,
                           match="input 'matrix': datatype FP64 does not match the model's FP32"):
            client.infer("echo-tensors", bad)
    finally:
        client.close()
