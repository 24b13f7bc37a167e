"""The worker's lifecycle: load the model, report its schema, setup(), then serve.

Configuration arrives as JSON in the COGSERVE_WORKER environment variable: the model
reference and folder, the mode (predict or train), and the numbers of the two socket
file descriptors inherited from the parent (control and data).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import pathlib
import socket
import sys
import threading
import warnings
from typing import TYPE_CHECKING, Any, NoReturn

from cogserve.exceptions import DefinitionError
from cogserve.model.loader import LoadedModel, batch_limits, load_model
from cogserve.model.schema import openapi_document
from cogserve.model.signature import read_signature
from cogserve.process.envvars import env_text
from cogserve.sdk.model_import import import_ref
from cogserve.wire import jsoncodec, protocol
from cogserve.wire.ipc import SyncChannel
from cogserve.wire.protocol import Mode, ToWorker, UserHealth
from cogserve.worker import modes, predict, tempdirs
from cogserve.worker.batch import Batch
from cogserve.worker.inputs import Downloads
from cogserve.worker.logs import LogRouter, LogTarget, capture_output

if TYPE_CHECKING:
    import asyncio


def main() -> None:
    cfg = jsoncodec.loads(os.environ.pop(protocol.WORKER_ENV))
    control = SyncChannel(socket.socket(fileno=cfg["control_fd"]))
    data = SyncChannel(socket.socket(fileno=cfg["data_fd"]))
    os.chdir(cfg["directory"])

    def setup_log(source: str, text: str) -> None:
        control.send(protocol.setup_log(source, text))

    router = LogRouter(LogTarget(setup_log))
    capture_output(router)
    tempdirs.install()  # a prediction's tempfiles go to its folder
    warnings.simplefilter("default", DeprecationWarning)

    try:
        telemetry = env_text("COG_OBSERVABILITY_CONFIG")
        if telemetry:  # cog.yaml observability.config: its provider before the model
            from cogserve.process import spans

            spans.install_custom(telemetry)
        model = load_model(cfg["ref"], pathlib.Path(cfg["directory"]), Mode(cfg["mode"]))
        trainer = _load_trainer(cfg.get("train_ref"), model, pathlib.Path(cfg["directory"]))
        if cfg["mode"] == Mode.TRAIN:  # a train-only model: `model` is the trainer
            schema = openapi_document(None, model.signature)
        else:
            schema = openapi_document(model.signature, trainer.signature if trainer else None,
                                      streaming=model.streaming)
    except DefinitionError as exc:
        router.fallback.flush()
        control.send(protocol.fatal(str(exc)))
        os._exit(1)
    except Exception as exc:  # noqa: BLE001 - anything else while loading is fatal too
        router.fallback.flush()
        control.send(protocol.fatal(f"loading {cfg['ref']} failed: "
                                    f"{type(exc).__name__}: {exc}"))
        os._exit(1)

    control.send(protocol.schema(
        schema, is_async=model.is_async, streaming=model.streaming,
        concurrency=model.concurrency, has_healthcheck=model.healthcheck is not None,
        deprecated_predict=model.deprecated_predict, versions=_versions(),
        descriptions=_descriptions(model, trainer, Mode(cfg["mode"])),
        batch=(model.batch.max_size, model.batch.max_wait) if model.batch else None,
    ))
    if cfg["schema_only"]:
        # `cogserve predict` stops here when the input is invalid; otherwise it says go.
        reply = control.recv()
        if not reply or reply.get(protocol.KIND) != ToWorker.GO:
            os._exit(0)

    if model.is_async:
        import asyncio  # only here: a sync worker starts 20 ms sooner without it

        asyncio.run(_serve_async(model, trainer, control, data, router))
    else:
        _serve_sync(model, trainer, control, data, router)


def _versions() -> dict[str, str]:
    """The `cog` SDK version the model gets from `import cog` (cogserve's shim, which
    load_model installed) and this Python's, as coglet reports its own process's."""
    import importlib
    import platform

    return {"python_sdk": importlib.import_module("cog").__version__,
            "python": platform.python_version()}


def _descriptions(model: LoadedModel, trainer: LoadedModel | None,
                  mode: Mode) -> dict[str, str]:
    """Each entry point's docstring by mode (a train-only model's `model` is its trainer)."""
    entries = {mode: model} if trainer is None else {Mode.PREDICT: model, Mode.TRAIN: trainer}
    return {str(m): text for m, loaded in entries.items() if (text := _docstring(loaded))}


def _docstring(loaded: LoadedModel) -> str:
    """The class's docstring, then run()'s (or the plain function's), cleaned and joined:
    what the model's author wrote about it. Only the model's own (never BaseRunner's)."""
    parts = []
    if loaded.instance is not None:
        parts.append(type(loaded.instance).__dict__.get("__doc__"))
    parts.append(getattr(loaded.run, "__doc__", None))
    return "\n\n".join(inspect.cleandoc(p) for p in parts if isinstance(p, str) and p.strip())


def _load_trainer(ref: str | None, model: LoadedModel,
                  directory: pathlib.Path) -> LoadedModel | None:
    """The train entry point, when cog.yaml names one (`train:`).

    When it names the predictor's own class, the one instance serves both, so setup()
    runs once and train() sees what it loaded.
    """
    if not ref:
        return None
    if model.instance is not None and import_ref(ref, directory) is type(model.instance):
        run = getattr(model.instance, "train", None)
        if not callable(run):
            raise DefinitionError(f"{ref}: class {type(model.instance).__name__} has no "
                                  "train() method")
        batch_limits(run, Mode.TRAIN)  # refuses a @batch train()
        return dataclasses.replace(
            model, ref=ref, run=run, setup=None, healthcheck=None,
            signature=read_signature(run), streaming=False, concurrency=None, batch=None,
            is_async=inspect.iscoroutinefunction(run) or inspect.isasyncgenfunction(run),
        )
    return load_model(ref, directory, Mode.TRAIN)


def _run_setup(model: LoadedModel) -> Any:
    """Call setup() (with weights when it asks); an awaitable result is returned."""
    if model.setup is None:
        return None
    return model.setup(**_setup_args(model))


def _setup_failed(control: SyncChannel, router: LogRouter, exc: BaseException) -> None:
    import traceback  # here: a worker that starts well never needs it (~1 ms of its start)

    router.fallback.write("stderr", "".join(traceback.format_exception(exc)))
    router.fallback.flush()
    control.send(protocol.setup_failed(f"{type(exc).__name__}: {exc}"))
    os._exit(1)


def _setup_args(model: LoadedModel) -> dict[str, Any]:
    if model.setup is None:
        return {}
    from cogserve.sdk.runner import weights_argument

    return weights_argument(model.setup)


# ---------------------------------------------------------------- sync


def _serve_sync(model: LoadedModel, trainer: LoadedModel | None, control: SyncChannel,
                data: SyncChannel, router: LogRouter) -> None:
    cancels = predict.Cancels()
    cancels.install_handler()
    downloads = Downloads()
    try:
        for entry in (model, trainer):
            if entry is not None:
                predict.run_to_end(_run_setup(entry))
    except BaseException as exc:  # noqa: BLE001
        _setup_failed(control, router, exc)
    router.fallback.flush()
    control.send(protocol.ready())

    def on_control(message: protocol.Message) -> None:
        kind = message.get(protocol.KIND)
        if kind == ToWorker.CANCEL:
            cancels.cancel(message["id"])
        elif kind == ToWorker.HEALTHCHECK:
            status, error = predict.run_healthcheck(model)
            control.send(protocol.healthcheck_result(message["id"], status, error))

    threading.Thread(target=_control_loop, args=(control, on_control), daemon=True,
                     name="cogserve-control").start()
    serving = modes.choose(model, trainer, cancels)
    if serving.batch is not None:
        _serve_batches(model, serving, data, router, downloads, cancels)
    while True:
        message = data.recv()
        if message is None:
            os._exit(0)
        call, mode = serving.call_for(message, data, router, downloads)
        cancels.begin(call, mode)
        try:
            mode.run(call)
        finally:
            cancels.end(call)


def _serve_batches(model: LoadedModel, serving: modes.Modes, data: SyncChannel,
                   router: LogRouter, downloads: Downloads,
                   cancels: predict.Cancels) -> NoReturn:
    """A sync `@batch` model: a reader thread takes each call off the data socket and
    prepares a batch's inputs there, so that a batch the parent sends ahead
    (`runtime/batcher.py`) is ready to run the moment the one on the main thread
    returns; the main thread runs the calls in order. (Only here: for one prediction
    at a time, the hand-off between the threads would be pure cost.)"""
    import queue

    calls: queue.SimpleQueue[tuple[modes.Call, modes.ServingMode] | None] = queue.SimpleQueue()

    def read() -> None:
        try:
            while True:
                message = data.recv()
                if message is None:
                    calls.put(None)
                    return
                call, mode = serving.call_for(message, data, router, downloads)
                cancels.begin(call, mode)
                if isinstance(call, Batch):
                    call.prepare(model)
                calls.put((call, mode))
        except BaseException:  # noqa: BLE001 - a fault here must not leave main waiting
            import traceback

            router.fallback.write("stderr", traceback.format_exc())
            router.fallback.flush()
            os._exit(1)  # the parent sees the worker end, as for a crash in run()

    threading.Thread(target=read, daemon=True, name="cogserve-read-ahead").start()
    while (item := calls.get()) is not None:
        call, mode = item
        try:
            mode.run(call)
        finally:
            cancels.end(call)
    os._exit(0)


def _control_loop(control: SyncChannel, handle: Any) -> None:
    while True:
        message = control.recv()
        if message is None or message.get(protocol.KIND) == ToWorker.SHUTDOWN:
            _exit()
        if message.get(protocol.KIND) == ToWorker.HEALTHCHECK:
            threading.Thread(target=handle, args=(message,), daemon=True).start()
        else:
            handle(message)


def _exit() -> NoReturn:
    """End the worker now; buffered trace spans are sent first (os._exit skips atexit)."""
    spans = sys.modules.get("cogserve.process.spans")
    if spans is not None:
        spans.flush()
    os._exit(0)


# ---------------------------------------------------------------- async


async def _serve_async(model: LoadedModel, trainer: LoadedModel | None,
                       control: SyncChannel, data: SyncChannel, router: LogRouter) -> None:
    import asyncio
    loop = asyncio.get_running_loop()
    try:
        for entry in (model, trainer):
            result = _run_setup(entry) if entry is not None else None
            if inspect.isawaitable(result):
                await result
    except BaseException as exc:  # noqa: BLE001
        _setup_failed(control, router, exc)
    router.fallback.flush()
    control.send(protocol.ready())

    cancels = predict.Cancels()
    downloads = Downloads()
    serving = modes.choose(model, trainer, cancels)

    def start(message: protocol.Message) -> None:
        call, mode = serving.call_for(message, data, router, downloads)
        cancels.begin(call, mode)
        coroutine = mode.run(call)
        assert coroutine is not None  # an async worker's modes give the task's coroutine
        call.task = task = loop.create_task(coroutine)
        if call.cancel_requested:  # a cancel that came before it
            task.cancel()
        task.add_done_callback(lambda t: _task_done(cancels, call, t))

    def on_control(message: protocol.Message) -> None:
        kind = message.get(protocol.KIND)
        if kind == ToWorker.CANCEL:
            cancels.cancel(message["id"])
        elif kind == ToWorker.HEALTHCHECK:
            loop.create_task(_healthcheck_async(model, control, message["id"]))

    def reader(channel: SyncChannel, handle: Any) -> None:
        while True:
            message = channel.recv()
            if message is None or message.get(protocol.KIND) == ToWorker.SHUTDOWN:
                _exit()
            loop.call_soon_threadsafe(handle, message)

    data.watch(loop, start, lambda: os._exit(0))
    threading.Thread(target=reader, args=(control, on_control), daemon=True).start()
    await asyncio.Event().wait()


def _task_done(cancels: predict.Cancels, call: modes.Call, task: asyncio.Task[Any]) -> None:
    cancels.end(call)
    if task.cancelled():  # before its first step: nothing else tells the parent
        call.never_ran()


async def _healthcheck_async(model: LoadedModel, control: SyncChannel, hid: Any) -> None:
    import asyncio
    try:
        if inspect.iscoroutinefunction(model.healthcheck):
            status, error = predict.healthcheck_verdict(await model.healthcheck())
        else:
            status, error = await asyncio.get_running_loop().run_in_executor(
                None, predict.run_healthcheck, model
            )
    except Exception as exc:  # noqa: BLE001
        status, error = UserHealth.UNHEALTHY, predict.healthcheck_raised(exc)
    control.send(protocol.healthcheck_result(hid, status, error))


if __name__ == "__main__":  # pragma: no cover
    main()
