"""The worker's lifecycle: load the model, report its schema, setup(), then serve.

Configuration arrives as JSON in the COGSERVE_WORKER environment variable: the model
reference and folder, the mode (predict or train), and the numbers of the two socket
file descriptors inherited from the parent (control and data).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import pathlib
import socket
import sys
import threading
import traceback
import warnings
from typing import Any

import orjson

from cogserve.exceptions import DefinitionError
from cogserve.ipc import SyncChannel
from cogserve.loader import LoadedModel, load_model
from cogserve.schema import openapi_document
from cogserve.worker import predict
from cogserve.worker.logs import LogTarget, Router, capture_output


def main() -> None:
    cfg = orjson.loads(os.environ.pop("COGSERVE_WORKER"))
    control = SyncChannel(socket.socket(fileno=cfg["control_fd"]))
    data = SyncChannel(socket.socket(fileno=cfg["data_fd"]))
    os.chdir(cfg["directory"])

    def setup_log(source: str, text: str) -> None:
        control.send({"t": "log", "source": source, "data": text})

    router = Router(LogTarget(setup_log))
    capture_output(router)
    warnings.simplefilter("default", DeprecationWarning)

    try:
        model = load_model(cfg["ref"], pathlib.Path(cfg["directory"]), cfg.get("mode", "predict"))
        train = None
        if cfg.get("train_ref"):
            from cogserve.loader import import_ref

            train = _train_signature(import_ref(cfg["train_ref"], pathlib.Path(cfg["directory"])))
        schema = openapi_document(model.signature, train, streaming=model.streaming)
    except DefinitionError as exc:
        router.fallback.flush()
        control.send({"t": "fatal", "reason": str(exc)})
        os._exit(1)
    except Exception as exc:  # noqa: BLE001 - anything else while loading is fatal too
        router.fallback.flush()
        control.send({"t": "fatal", "reason": f"loading {cfg['ref']} failed: "
                      f"{type(exc).__name__}: {exc}"})
        os._exit(1)

    control.send({
        "t": "schema",
        "schema": schema,
        "is_async": model.is_async,
        "streaming": model.streaming,
        "concurrency": model.concurrency,
        "has_healthcheck": model.healthcheck is not None,
        "deprecated_predict": model.deprecated_predict,
    })
    if cfg.get("schema_only"):
        # `cogserve predict` stops here when the input is invalid; otherwise it says go.
        reply = control.recv()
        if not reply or reply.get("t") != "go":
            os._exit(0)

    if model.is_async:
        asyncio.run(_serve_async(model, control, data, router))
    else:
        _serve_sync(model, control, data, router)


def _train_signature(obj: Any) -> Any:
    from cogserve.signature import read_signature

    fn = getattr(obj, "train", obj) if inspect.isclass(obj) else obj
    return read_signature(fn, skip_self=inspect.isclass(obj))


def _setup_failed(control: SyncChannel, router: Router, exc: BaseException) -> None:
    router.fallback.write("stderr", "".join(traceback.format_exception(exc)))
    router.fallback.flush()
    control.send({"t": "setup_failed", "error": f"{type(exc).__name__}: {exc}"})
    os._exit(1)


def _setup_args(model: LoadedModel) -> dict[str, Any]:
    if model.setup is None:
        return {}
    try:
        params = inspect.signature(model.setup).parameters
    except (TypeError, ValueError):
        return {}
    if "weights" in params:
        weights = os.environ.get("COG_WEIGHTS")
        if weights is None and pathlib.Path("weights").exists():
            weights = "weights"
        return {"weights": weights}
    return {}


# ---------------------------------------------------------------- sync


def _serve_sync(model: LoadedModel, control: SyncChannel, data: SyncChannel,
                router: Router) -> None:
    predict.install_cancel_handler()
    try:
        if model.setup is not None:
            result = model.setup(**_setup_args(model))
            if inspect.isawaitable(result):
                asyncio.run(_await(result))
    except BaseException as exc:  # noqa: BLE001
        _setup_failed(control, router, exc)
    router.fallback.flush()
    control.send({"t": "ready"})

    def on_control(message: dict[str, Any]) -> None:
        kind = message.get("t")
        if kind == "cancel":
            predict.cancel_sync(message["id"])
        elif kind == "healthcheck":
            status, error = predict.run_healthcheck(model)
            control.send({"t": "healthcheck_result", "id": message["id"], "status": status,
                          "error": error})

    threading.Thread(target=_control_loop, args=(control, on_control), daemon=True,
                     name="cogserve-control").start()
    send = data.send
    while True:
        message = data.recv()
        if message is None:
            os._exit(0)
        if message.get("t") == "predict":
            predict.run_sync(model, predict.Job(message, send, router))


def _control_loop(control: SyncChannel, handle: Any) -> None:
    while True:
        message = control.recv()
        if message is None or message.get("t") == "shutdown":
            os._exit(0)
        if message.get("t") == "healthcheck":
            threading.Thread(target=handle, args=(message,), daemon=True).start()
        else:
            handle(message)


async def _await(awaitable: Any) -> Any:
    return await awaitable


# ---------------------------------------------------------------- async


async def _serve_async(model: LoadedModel, control: SyncChannel, data: SyncChannel,
                       router: Router) -> None:
    loop = asyncio.get_running_loop()
    try:
        if model.setup is not None:
            result = model.setup(**_setup_args(model))
            if inspect.isawaitable(result):
                await result
    except BaseException as exc:  # noqa: BLE001
        _setup_failed(control, router, exc)
    router.fallback.flush()
    control.send({"t": "ready"})

    jobs: dict[str, predict.Job] = {}
    send = data.send

    def start(message: dict[str, Any]) -> None:
        job = predict.Job(message, send, router)
        jobs[job.id] = job
        task = loop.create_task(predict.run_async(model, job))
        job.task = task
        task.add_done_callback(lambda _t: jobs.pop(job.id, None))

    def on_control(message: dict[str, Any]) -> None:
        kind = message.get("t")
        if kind == "cancel":
            job = jobs.get(message["id"])
            if job is not None and job.task is not None:
                job.cancel_requested = True
                job.task.cancel()
        elif kind == "healthcheck":
            loop.create_task(_healthcheck_async(model, control, message["id"]))

    def reader(channel: SyncChannel, handle: Any) -> None:
        while True:
            message = channel.recv()
            if message is None or message.get("t") == "shutdown":
                os._exit(0)
            loop.call_soon_threadsafe(handle, message)

    threading.Thread(target=reader, args=(data, start), daemon=True).start()
    threading.Thread(target=reader, args=(control, on_control), daemon=True).start()
    await asyncio.Event().wait()


async def _healthcheck_async(model: LoadedModel, control: SyncChannel, hid: Any) -> None:
    try:
        if inspect.iscoroutinefunction(model.healthcheck):
            result = await model.healthcheck()
            status, error = ("unhealthy", "user healthcheck returned False") if result is False \
                else ("healthy", None)
        else:
            status, error = await asyncio.get_running_loop().run_in_executor(
                None, predict.run_healthcheck, model
            )
    except Exception as exc:  # noqa: BLE001
        status, error = "unhealthy", f"user healthcheck raised {type(exc).__name__}: {exc}"
    control.send({"t": "healthcheck_result", "id": hid, "status": status, "error": error})


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
