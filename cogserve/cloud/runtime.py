"""Everything the cloud contracts ask of the runtime, in one place (as `mcp/runtime.py`
for MCP): health, and predictions made the way `POST /predictions` makes them (the
server accepting, the input checked by the model's own validator, `Service.create`
giving it a slot or a place in the queue, its deadline and metrics). Nothing else in
`cogserve.cloud` touches the `Service`, so a change to its calls is a change here only.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from cogserve.http.disconnect import abandon, wait_or_cancel
from cogserve.model.verdicts import check_inputs
from cogserve.runtime.errors import AtCapacity
from cogserve.runtime.request import PredictionRequest
from cogserve.wire.protocol import Mode
from cogserve.wire.states import SERVING, Status

if TYPE_CHECKING:
    from cogserve.http.asgi import Receive
    from cogserve.runtime.prediction import Prediction
    from cogserve.runtime.service import Service


class CloudRuntime:
    def __init__(self, service: Service) -> None:
        self.service = service

    async def healthy(self) -> bool:
        """Whether the model is set up and serving (READY, or BUSY with every slot taken:
        a platform that saw a busy replica as unhealthy would replace it), the model's own
        healthcheck included."""
        health = await self.service.health()
        return health.status in SERVING

    def check_accepting(self) -> None:
        """Raise the runtime's `Refusal` when nothing is accepted now (not ready, shutting
        down)."""
        self.service.check_accepting()

    def check(self, inputs: dict[str, Any]) -> None:
        """Raise the runtime's `Refusal` when nothing is accepted now, `InputError`
        (naming the fields) for an input the model refuses."""
        service = self.service
        service.check_accepting()
        check_inputs(inputs, service.validator(Mode.PREDICT))

    async def run(self, inputs: list[dict[str, Any]], receive: Receive
                  ) -> list[Prediction] | None:
        """One prediction per checked input, all finished, in order; None (and all
        cancelled) if the client left first. They are made at once, so a model with
        `@batch` batches them and one with concurrency runs them side by side; past
        the model's free slots (and queue), the rest start as this request's own
        predictions finish. Raises `Refusal` when none of them can start."""
        service = self.service
        started: list[Prediction] = []
        try:
            for each in inputs:
                while True:
                    try:
                        started.append(service.create(
                            PredictionRequest(each, id=service.new_id())))
                        break
                    except AtCapacity:
                        running = [p for p in started if not p.done.done()]
                        if not running:
                            raise
                        # (a client that leaves meanwhile is noticed below)
                        await asyncio.wait([asyncio.shield(p.done) for p in running],
                                           return_when=asyncio.FIRST_COMPLETED)
            for prediction in started:  # they run together: this waits for the last
                if not await wait_or_cancel(service, prediction, receive):
                    self.cancel(started)
                    return None
        except BaseException:
            self.cancel(started)
            raise
        return started

    def cancel(self, predictions: list[Prediction]) -> None:
        for prediction in predictions:
            abandon(self.service, prediction)


def outcome(prediction: Prediction) -> tuple[bool, Any]:
    """(succeeded, the output or the error's message) of a finished prediction."""
    if prediction.status is Status.SUCCEEDED:
        return True, prediction.current_output()
    return False, prediction.error or f"the prediction was {prediction.status.value}"
