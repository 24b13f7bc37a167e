"""Amazon SageMaker's container contract: `GET /ping` (200 once the model can take
predictions, 503 before: SageMaker sends traffic only to a container that answers 200)
and `POST /invocations` (the body is the model's input object, as `input` of a Cog
request; the answer is the prediction's output as JSON: file outputs as data URLs, or
uploaded with `--upload-url`). SageMaker passes the caller's `ContentType` and `Accept`
on as headers: JSON in and out, anything else is 415 or 406. A prediction that fails
is a 500 naming its error (SageMaker gives the caller a ModelError with it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogserve.cloud.answers import errors_answered, health, read_json, refuse
from cogserve.cloud.runtime import CloudRuntime, outcome
from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.responses import send_json

if TYPE_CHECKING:
    from cogserve.http.routing import Handler


def routes(runtime: CloudRuntime, max_body: int) -> dict[str, dict[str, Handler]]:
    @errors_answered
    async def invocations(scope: Scope, receive: Receive, send: Send) -> None:
        runtime.check_accepting()  # not ready: 503 before the body is read
        inputs = await read_json(scope, receive, max_body)
        if not isinstance(inputs, dict):
            raise refuse(422, "the body must be a JSON object of the model's inputs")
        runtime.check(inputs)
        done = await runtime.run([inputs], receive)
        if done is None:
            return  # the caller left: the prediction was cancelled
        succeeded, value = outcome(done[0])
        if not succeeded:
            raise refuse(500, f"the prediction failed: {value}")
        await send_json(send, 200, value)

    return {"/ping": {"GET": health(runtime)}, "/invocations": {"POST": invocations}}
