"""The parent<->worker protocol: every message, key, threshold and file prefix, in one place.

Two socketpairs join the parent and the worker (see `cogserve.wire.ipc` for the framing):
the *control* channel carries the lifecycle (schema, setup logs, ready, cancel,
healthcheck, shutdown, and the `go` of `cogserve predict`'s handshake) and the *data*
channel carries predictions and their events. Every message is a JSON object whose
`t` key names its kind; the builders below are the only places a message is spelled,
so the parent, the worker and the CLI agree by construction, and
`tests/unit/test_protocol.py` pins the exact bytes each one encodes to.

Kinds are `StrEnum`s: they compare and hash equal to the plain strings a decoded
frame holds, and orjson writes them as those strings, so the wire is unchanged.

This module is imported by the worker before the model: it must stay cheap (no
asyncio, no third-party imports).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

Message = dict[str, Any]

KIND: Final = "t"  # the key that names every message's kind


class ToWorker(StrEnum):
    """What the parent sends. PREDICT goes on the data channel, the rest on control."""

    PREDICT = "predict"  # {id, input | input=None + input_file, [mode: "train"]}
    BATCH = "batch"  # {items: [PREDICT...]}: one run() call of a @batch model for them all
    CANCEL = "cancel"  # {id}
    HEALTHCHECK = "healthcheck"  # {id}: run the model's healthcheck()
    SHUTDOWN = "shutdown"  # exit now
    GO = "go"  # handshake of a schema-only start (`cogserve predict`): run setup()


class FromWorker(StrEnum):
    """What the worker sends. LOG goes on both channels (setup logs on control)."""

    # control channel
    SCHEMA = "schema"
    READY = "ready"
    SETUP_FAILED = "setup_failed"
    FATAL = "fatal"  # the model could not be loaded at all
    HEALTHCHECK_RESULT = "healthcheck_result"
    # data channel (each carries its prediction's `id`)
    LOG = "log"
    OUTPUT = "output"  # one item of an iterator's output
    METRIC = "metric"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL: Final = frozenset({FromWorker.DONE, FromWorker.FAILED, FromWorker.CANCELLED})


class Mode(StrEnum):
    """Which entry point of the model runs: run()/predict() or train()."""

    PREDICT = "predict"
    TRAIN = "train"


class UserHealth(StrEnum):
    """The outcome of the model's own healthcheck(), in a HEALTHCHECK_RESULT."""

    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"


# ---------------------------------------------------------------- files between processes

# An output file: the worker sends {FILE_KEY: absolute path}; the parent replaces the
# marker with a data URL or an upload URL.
FILE_KEY: Final = "__cogserve_file__"
# A packed tensor input (built by the V2 routes only, after validation):
# {TENSOR_KEY: {"datatype", "shape", and one of TENSOR_B64 | TENSOR_FILE | TENSOR_ITEMS}}
TENSOR_KEY: Final = "__cogserve_tensor__"
TENSOR_B64: Final = "b64"  # little-endian bytes, base64
TENSOR_FILE: Final = "file"  # the same bytes in a spill file the worker deletes
TENSOR_ITEMS: Final = "items_b64"  # BYTES elements, each base64


def packed_tensor(datatype: str, shape: list[int], form: str, payload: Any) -> Message:
    """A tensor input as the worker receives it; `form` is TENSOR_B64, TENSOR_FILE or
    TENSOR_ITEMS."""
    return {TENSOR_KEY: {"datatype": datatype, "shape": shape, form: payload}}


# An input document over this many bytes goes to the worker as a file (`input_file`),
# not in the frame.
INPUT_SPILL_THRESHOLD: Final = 6 * 1024 * 1024
# Packed tensors of at least this many bytes go as a file rather than base64 in the
# frame: 1M float32 costs ~1 ms instead of ~25 ms.
TENSOR_FILE_THRESHOLD: Final = 64 * 1024

SERVER_DIR_PREFIX: Final = "cogserve-"  # the parent's folder for one server (worker TMPDIR)
INPUT_SPILL_PREFIX: Final = "input-"  # a spilled input document, in the server folder
TENSOR_SPILL_PREFIX: Final = "tensor-"  # a spilled tensor, in the server folder
PREDICTION_DIR_PREFIX: Final = "cogserve-in-"  # one prediction's folder, made by the worker
OUTPUT_SPILL_PREFIX: Final = "cogserve-out-"  # a file-like output written out by the worker
# A worker's folder in memory for data: URL inputs (`runtime/folders.py`), if it has one.
MEMORY_DIR_ENV: Final = "COGSERVE_WORKER_MEMORY_DIR"

# The worker's configuration: JSON in this environment variable (see `worker_config`).
WORKER_ENV: Final = "COGSERVE_WORKER"


def worker_config(*, ref: str, directory: str, mode: Mode, train_ref: str | None,
                  schema_only: bool, control_fd: int, data_fd: int) -> Message:
    """What the worker reads from WORKER_ENV at start. `schema_only`: after SCHEMA, wait
    for GO (or the channel closing) before setup()."""
    return {"ref": ref, "directory": directory, "mode": mode, "train_ref": train_ref,
            "schema_only": schema_only, "control_fd": control_fd, "data_fd": data_fd}


# ---------------------------------------------------------------- parent -> worker


def predict(prediction_id: str, raw_input: dict[str, Any], mode: Mode,
            context: dict[str, str] | None = None) -> Message:
    """`context`: the request's `context` object, the model's `current_scope().context`."""
    message: Message = {KIND: ToWorker.PREDICT, "id": prediction_id, "input": raw_input}
    if mode is Mode.TRAIN:
        message["mode"] = Mode.TRAIN
    if context:
        message["context"] = context
    return message


def batch(items: list[Message]) -> Message:
    """Predictions of a `@batch` model for one run() call, each a PREDICT message (built
    by `predict`, spilled and traced as it would be alone). The worker answers each one
    with its own frames and its own terminal message, as if it had run alone."""
    return {KIND: ToWorker.BATCH, "items": items}


INPUT_FILE: Final = "input_file"  # in PREDICT: the file that holds its input document


def spill_input(message: Message, path: str) -> None:
    """Point a PREDICT message at a file that holds its input document."""
    message["input"] = None
    message[INPUT_FILE] = path


def cancel(prediction_id: str) -> Message:
    return {KIND: ToWorker.CANCEL, "id": prediction_id}


def healthcheck(request_id: int) -> Message:
    return {KIND: ToWorker.HEALTHCHECK, "id": request_id}


def shutdown() -> Message:
    return {KIND: ToWorker.SHUTDOWN}


def go() -> Message:
    return {KIND: ToWorker.GO}


# ---------------------------------------------------------------- worker -> parent, control


def schema(document: dict[str, Any], *, is_async: bool, streaming: bool,
           concurrency: int | None, has_healthcheck: bool, deprecated_predict: bool,
           versions: dict[str, str], descriptions: dict[str, str],
           batch: tuple[int, float] | None = None) -> Message:
    """`versions`: what runs the model, under the reference's `/health-check` keys
    (`python_sdk`: the `cog` version the model imports; `python`). `descriptions`: each
    entry point's docstring by `Mode` (the parent never imports the model, and Cog's
    schema has no place for them; the MCP tools' descriptions). `batch`: a `@batch`
    run()'s (max_size, max_wait), present only then."""
    message: Message = {KIND: FromWorker.SCHEMA, "schema": document, "is_async": is_async,
                        "streaming": streaming, "concurrency": concurrency,
                        "has_healthcheck": has_healthcheck,
                        "deprecated_predict": deprecated_predict, "versions": versions,
                        "descriptions": descriptions}
    if batch is not None:
        message["batch"] = {"max_size": batch[0], "max_wait": batch[1]}
    return message


def setup_log(source: str, data: str) -> Message:
    return {KIND: FromWorker.LOG, "source": source, "data": data}


def ready() -> Message:
    return {KIND: FromWorker.READY}


def setup_failed(error: str) -> Message:
    return {KIND: FromWorker.SETUP_FAILED, "error": error}


def fatal(reason: str) -> Message:
    return {KIND: FromWorker.FATAL, "reason": reason}


def healthcheck_result(request_id: Any, status: UserHealth, error: str | None) -> Message:
    return {KIND: FromWorker.HEALTHCHECK_RESULT, "id": request_id, "status": status,
            "error": error}


# ---------------------------------------------------------------- worker -> parent, data
# `encoded` is an output as `cogserve.worker.outputs.encode_output` returns it:
# {"output": value} plus "files": True when the value holds FILE_KEY markers.


def log(prediction_id: str, source: str, data: str) -> Message:
    return {KIND: FromWorker.LOG, "source": source, "data": data, "id": prediction_id}


def output(prediction_id: str, encoded: Message) -> Message:
    return {KIND: FromWorker.OUTPUT, **encoded, "id": prediction_id}


def metric(prediction_id: str, name: str, value: Any, mode: str) -> Message:
    return {KIND: FromWorker.METRIC, "name": name, "value": value, "mode": mode,
            "id": prediction_id}


def done(prediction_id: str, encoded: Message, predict_time: float) -> Message:
    return {KIND: FromWorker.DONE, **encoded, "predict_time": predict_time, "id": prediction_id}


def failed(prediction_id: str, error: str) -> Message:
    return {KIND: FromWorker.FAILED, "error": error, "id": prediction_id}


def cancelled(prediction_id: str) -> Message:
    return {KIND: FromWorker.CANCELLED, "id": prediction_id}


def hand_over_folders(message: Message, folders: list[str]) -> None:
    """On a terminal message: the parent removes these prediction folders (on disk, and
    in memory when a data: URL input was written there) once its files are sent (the
    worker removes them itself when no file output was reported)."""
    message["tmpdir"] = folders


# ---------------------------------------------------------------- observability

# In PREDICT, only with tracing on: the parent's prediction span as `traceparent` (and
# `tracestate`) headers; the worker's `run` span continues it.
TRACE: Final = "trace"
# In a terminal message: [bytes, failures] of http(s) file inputs the worker fetched
# since it last reported (the parent owns the metrics).
DOWNLOADS: Final = "downloads"


def add_trace(message: Message, carrier: dict[str, str]) -> None:
    message[TRACE] = carrier


def report_downloads(message: Message, tally: list[int]) -> None:
    message[DOWNLOADS] = tally


def carries_files(message: Message) -> bool:
    """Whether the parent must resolve file markers or remove a folder for this message."""
    return bool(message.get("files")) or "tmpdir" in message
