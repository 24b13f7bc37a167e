"""Frames from the workers, applied to the predictions they belong to, in order.

A frame that carries files (a file output to encode or upload, a prediction folder
handed over) waits for that work, and the frames after it for it (`Prediction.tail`),
so a prediction's logs, outputs and end are applied in the order the worker sent them;
every other frame is applied at once, on the per-frame path (`on_data`, which the
worker's channel calls). An end goes to `Predictions.complete`, the one way a
prediction ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any

from cogserve.runtime import handover
from cogserve.runtime.events import EventBus, RuntimeEvent
from cogserve.runtime.prediction import Prediction
from cogserve.wire import protocol
from cogserve.wire.protocol import FromWorker
from cogserve.wire.states import Status

if TYPE_CHECKING:
    from cogserve.runtime.inflight import Predictions, Slots
    from cogserve.runtime.outputs import FileOutputs

# looked up once (an enum member through its class is ~75 ns on Python 3.11)
_LOG, _OUTPUT, _METRIC = FromWorker.LOG, FromWorker.OUTPUT, FromWorker.METRIC


class WorkerFrames:
    def __init__(self, predictions: Predictions, slots: Slots, events: EventBus,
                 file_outputs: FileOutputs, tmp_dirs: Collection[str]) -> None:
        self._running: dict[str, Prediction] = predictions.running
        self._complete: Callable[..., Any] = predictions.complete
        self._send_cancel = slots.send_cancel
        self._events = events
        self._file_outputs = file_outputs
        self._tmp_dirs = tmp_dirs

    def on_data(self, message: protocol.Message) -> None:
        prediction = self._running.get(message.get("id", ""))
        if prediction is None:  # e.g. it failed already on an upload error
            handover.discard_folder(message, self._tmp_dirs)
            return
        if prediction.tail is None and not protocol.carries_files(message):
            self._apply(prediction, message)
            return
        previous = prediction.tail
        prediction.tail = asyncio.get_running_loop().create_task(
            self._apply_later(prediction, message, previous))

    async def _apply_later(self, prediction: Prediction, message: protocol.Message,
                           previous: Awaitable[None] | None) -> None:
        if previous is not None:
            await previous
        try:
            if "output" in message and message["output"] is not None:
                # an iterator's file is named by its place in the stream: output.<n>.ext
                index = (len(prediction.current_output())
                         if message[protocol.KIND] == FromWorker.OUTPUT else None)
                message["output"] = await self._file_outputs.resolve(
                    message["output"], prediction, index)
        except Exception as exc:  # noqa: BLE001 - an upload failure fails the prediction
            if not prediction.terminal:
                if prediction.slot is not None:
                    self._send_cancel(prediction.slot, prediction.id)
                self._complete(prediction, Status.FAILED, f"file output: {exc}")
            handover.discard_folder(message, self._tmp_dirs)
            return
        self._apply(prediction, message)
        handover.discard_folder(message, self._tmp_dirs)

    def _apply(self, prediction: Prediction, message: protocol.Message) -> None:
        if prediction.terminal:
            return
        prediction.mark_processing()
        kind = message[protocol.KIND]
        if kind == _LOG:  # a frame per log line and streamed token: constants, not
            prediction.append_log(message["source"], message["data"])  # FromWorker.X
        elif kind == _OUTPUT:
            prediction.append_output(message["output"])
        elif kind == _METRIC:
            prediction.record_metric(message["name"], message["value"], message["mode"])
        else:  # a terminal frame: done | failed | cancelled
            if protocol.DOWNLOADS in message:  # file inputs the worker fetched
                nbytes, failures = message[protocol.DOWNLOADS]
                self._events.emit(RuntimeEvent.DOWNLOADS, bytes=nbytes, failures=failures)
            if kind == FromWorker.DONE:
                self._complete(prediction, Status.SUCCEEDED, output=message.get("output"),
                              predict_time=message.get("predict_time"))
            elif kind == FromWorker.FAILED:
                self._complete(prediction, Status.FAILED,
                              message.get("error") or "prediction failed")
            elif kind == FromWorker.CANCELLED:
                self._complete(prediction, Status.CANCELED)
