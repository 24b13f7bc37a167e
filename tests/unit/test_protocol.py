"""The worker protocol's wire bytes, pinned: a change here is a change of the wire.

Each builder of `cogserve.wire.protocol` is encoded with the frame format of `cogserve.wire.ipc`
and compared with the exact bytes (4-byte big-endian length, then compact JSON with the
keys in this order), so a refactor cannot change what parent and worker exchange.
"""

from __future__ import annotations

import struct

import pytest

from cogserve.wire import ipc, protocol
from cogserve.wire.protocol import FromWorker, Mode, ToWorker, UserHealth


def frame(body: bytes) -> bytes:
    return struct.pack("!I", len(body)) + body


CASES: list[tuple[str, protocol.Message, bytes]] = [
    # parent -> worker
    ("predict", protocol.predict("p1", {"text": "hi"}, Mode.PREDICT),
     b'{"t":"predict","id":"p1","input":{"text":"hi"}}'),
    ("predict train", protocol.predict("p1", {}, Mode.TRAIN),
     b'{"t":"predict","id":"p1","input":{},"mode":"train"}'),
    ("batch", protocol.batch([protocol.predict("p1", {"x": 1}, Mode.PREDICT),
                              protocol.predict("p2", {"x": 2}, Mode.PREDICT)]),
     b'{"t":"batch","items":[{"t":"predict","id":"p1","input":{"x":1}},'
     b'{"t":"predict","id":"p2","input":{"x":2}}]}'),
    ("cancel", protocol.cancel("p1"), b'{"t":"cancel","id":"p1"}'),
    ("healthcheck", protocol.healthcheck(3), b'{"t":"healthcheck","id":3}'),
    ("shutdown", protocol.shutdown(), b'{"t":"shutdown"}'),
    ("go", protocol.go(), b'{"t":"go"}'),
    # worker -> parent, control
    ("schema", protocol.schema({"openapi": "3.0.2"}, is_async=False, streaming=True,
                               concurrency=None, has_healthcheck=False,
                               deprecated_predict=False,
                               versions={"python_sdk": "0.23.1", "python": "3.11.7"},
                               descriptions={"predict": "Greets."}),
     b'{"t":"schema","schema":{"openapi":"3.0.2"},"is_async":false,"streaming":true,'
     b'"concurrency":null,"has_healthcheck":false,"deprecated_predict":false,'
     b'"versions":{"python_sdk":"0.23.1","python":"3.11.7"},'
     b'"descriptions":{"predict":"Greets."}}'),
    ("schema of a @batch model", protocol.schema(
        {}, is_async=False, streaming=False, concurrency=None, has_healthcheck=False,
        deprecated_predict=False, versions={}, descriptions={}, batch=(16, 0.01)),
     b'{"t":"schema","schema":{},"is_async":false,"streaming":false,"concurrency":null,'
     b'"has_healthcheck":false,"deprecated_predict":false,"versions":{},"descriptions":{},'
     b'"batch":{"max_size":16,"max_wait":0.01}}'),
    ("setup log", protocol.setup_log("stdout", "loading\n"),
     b'{"t":"log","source":"stdout","data":"loading\\n"}'),
    ("ready", protocol.ready(), b'{"t":"ready"}'),
    ("setup_failed", protocol.setup_failed("ValueError: no"),
     b'{"t":"setup_failed","error":"ValueError: no"}'),
    ("fatal", protocol.fatal("bad ref"), b'{"t":"fatal","reason":"bad ref"}'),
    ("healthcheck_result", protocol.healthcheck_result(3, UserHealth.UNHEALTHY, "down"),
     b'{"t":"healthcheck_result","id":3,"status":"unhealthy","error":"down"}'),
    ("healthcheck_result ok", protocol.healthcheck_result(4, UserHealth.HEALTHY, None),
     b'{"t":"healthcheck_result","id":4,"status":"healthy","error":null}'),
    # worker -> parent, data
    ("log", protocol.log("p1", "stderr", "x\n"),
     b'{"t":"log","source":"stderr","data":"x\\n","id":"p1"}'),
    ("output", protocol.output("p1", {"output": "tok"}),
     b'{"t":"output","output":"tok","id":"p1"}'),
    ("output with files", protocol.output("p1", {"output": {protocol.FILE_KEY: "/t/a.png"},
                                                 "files": True}),
     b'{"t":"output","output":{"__cogserve_file__":"/t/a.png"},"files":true,"id":"p1"}'),
    ("metric", protocol.metric("p1", "tokens", 3, "incr"),
     b'{"t":"metric","name":"tokens","value":3,"mode":"incr","id":"p1"}'),
    ("done", protocol.done("p1", {"output": 42}, 0.5),
     b'{"t":"done","output":42,"predict_time":0.5,"id":"p1"}'),
    ("failed", protocol.failed("p1", "boom"), b'{"t":"failed","error":"boom","id":"p1"}'),
    ("cancelled", protocol.cancelled("p1"), b'{"t":"cancelled","id":"p1"}'),
    # markers inside an input
    ("packed tensor", protocol.predict("p2", {"x": protocol.packed_tensor(
        "FP32", [2], protocol.TENSOR_B64, "AACAPwAAAEA=")}, Mode.PREDICT),
     b'{"t":"predict","id":"p2","input":{"x":{"__cogserve_tensor__":{"datatype":"FP32",'
     b'"shape":[2],"b64":"AACAPwAAAEA="}}}}'),
]


@pytest.mark.parametrize(("name", "message", "body"), CASES, ids=[c[0] for c in CASES])
def test_each_message_encodes_to_exactly_these_bytes(name: str, message: protocol.Message,
                                                     body: bytes) -> None:
    assert ipc.encode(message) == frame(body)


def test_a_spilled_input_and_a_handed_over_folder_keep_their_place() -> None:
    message = protocol.predict("p1", {"big": "x"}, Mode.TRAIN)
    protocol.spill_input(message, "/tmp/s/input-1.json")
    assert ipc.encode(message) == frame(
        b'{"t":"predict","id":"p1","input":null,"mode":"train",'
        b'"input_file":"/tmp/s/input-1.json"}')
    done = protocol.done("p1", {"output": None, "files": True}, 1.0)
    protocol.hand_over_folders(done, ["/tmp/s/cogserve-in-x", "/dev/shm/s/cogserve-in-y"])
    assert ipc.encode(done) == frame(
        b'{"t":"done","output":null,"files":true,"predict_time":1.0,"id":"p1",'
        b'"tmpdir":["/tmp/s/cogserve-in-x","/dev/shm/s/cogserve-in-y"]}')
    assert protocol.carries_files(done)
    assert not protocol.carries_files(protocol.done("p1", {"output": 1}, 1.0))


def test_the_worker_config_names_every_field() -> None:
    config = protocol.worker_config(ref="run.py:Runner", directory="/m", mode=Mode.TRAIN,
                                    train_ref=None, schema_only=True, control_fd=5, data_fd=6)
    assert ipc.encode(config) == frame(
        b'{"ref":"run.py:Runner","directory":"/m","mode":"train","train_ref":null,'
        b'"schema_only":true,"control_fd":5,"data_fd":6}')


def test_decoded_kinds_compare_equal_to_the_enums() -> None:
    """A frame decodes to plain strings; dispatch compares them with the enum members."""
    decoded: list[protocol.Message] = []
    splitter = ipc.FrameSplitter(decoded.append)
    splitter.feed(ipc.encode(protocol.done("p1", {"output": 1}, 0.1)) + ipc.encode(
        protocol.cancel("p1")))
    assert [m[protocol.KIND] for m in decoded] == [FromWorker.DONE, ToWorker.CANCEL]
    assert decoded[0][protocol.KIND] in protocol.TERMINAL
    assert type(decoded[0][protocol.KIND]) is str
