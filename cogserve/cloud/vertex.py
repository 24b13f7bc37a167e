"""Vertex AI's custom container contract: the health route (AIP_HEALTH_ROUTE; 200 once
the model can take predictions, 503 before) and the predict route (AIP_PREDICT_ROUTE),
on AIP_HTTP_PORT.

A predict request is `{"instances": [...], "parameters": {...}}`; the answer is
`{"predictions": [...]}`, one per instance, in order. Each instance is one prediction
whose input is the instance object with `parameters` under it (an input the instance
names itself wins); all of them are made at once, so a model with `@batch` runs them
together in batches, and a model with concurrency runs them side by side. Every
instance is checked before any runs; one that fails fails the request (500) naming its
place and its error, as Vertex has no per-instance error. More instances than the model
has free slots are run as slots free up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cogserve.cloud.answers import errors_answered, health, read_json, refuse
from cogserve.cloud.runtime import CloudRuntime, outcome
from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.responses import send_json
from cogserve.model.verdicts import InputError

if TYPE_CHECKING:
    from cogserve.http.routing import Handler
    from cogserve.process.envvars import VertexRoutes


def routes(runtime: CloudRuntime, max_body: int, paths: VertexRoutes
           ) -> dict[str, dict[str, Handler]]:
    @errors_answered
    async def predict(scope: Scope, receive: Receive, send: Send) -> None:
        runtime.check_accepting()  # not ready: 503 before the body is read
        inputs = instance_inputs(await read_json(scope, receive, max_body))
        for number, each in enumerate(inputs):
            try:
                runtime.check(each)
            except InputError as exc:
                raise refuse(422, f"instance {number}: {exc}") from None
        started = await runtime.run(inputs, receive)
        if started is None:
            return  # the caller left: the predictions were cancelled
        predictions = []
        for number, prediction in enumerate(started):
            succeeded, value = outcome(prediction)
            if not succeeded:
                raise refuse(500, f"instance {number}: the prediction failed: {value}")
            predictions.append(value)
        await send_json(send, 200, {"predictions": predictions})

    return {paths.health: {"GET": health(runtime)}, paths.predict: {"POST": predict}}


def instance_inputs(document: Any) -> list[dict[str, Any]]:
    """Each instance's input (the parameters under it), or 400 for another shape."""
    if not isinstance(document, dict) or not isinstance(document.get("instances"), list):
        raise refuse(400, 'the body must be {"instances": [...], "parameters": {...}}')
    instances = document["instances"]
    parameters = document.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise refuse(400, '"parameters" must be an object of inputs')
    if not instances:
        raise refuse(400, '"instances" is empty: nothing to predict')
    inputs = []
    for number, instance in enumerate(instances):
        if not isinstance(instance, dict):
            raise refuse(400, f"instance {number} is not an object of the model's inputs")
        inputs.append({**parameters, **instance})
    return inputs
