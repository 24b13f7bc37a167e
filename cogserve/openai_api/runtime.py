"""Everything the OpenAI front end asks of the runtime, in one place.

A /v1 call is a prediction made the way `POST /predictions` makes one: the server must
be accepting, the inputs pass the model's own `InputValidator`, and `Service.create`
queues it or gives it a slot, with its deadline, metrics and logs; it is remembered, so
`GET /predictions/{id}` shows it too (the response's id ends with the prediction's).
Nothing else in `cogserve.openai_api` touches the `Service`, so a change to the
runtime's calls is a change here only.
"""

from __future__ import annotations

from typing import Any

from cogserve.http.asgi import Receive
from cogserve.http.disconnect import abandon, wait_or_cancel
from cogserve.model.validation import FieldError
from cogserve.openai_api.errors import APIError
from cogserve.openai_api.shapes import Model, OverrideError, read
from cogserve.runtime.errors import NotReady
from cogserve.runtime.prediction import Listener, Prediction
from cogserve.runtime.request import PredictionRequest
from cogserve.runtime.service import Service


class OpenAIRuntime:
    """The model as the /v1 routes see it, and the predictions they make, on one Service."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._model: Model | None = None
        self._schema_seen: Any = None

    def model(self) -> Model:
        """The model's shape and mapping; read again when a (re)started worker reports
        its schema. Raises NotReady while none has, APIError for a bad cog.yaml override."""
        service = self.service
        schema = service.schema
        if schema is None:
            reason = service.fatal_reason or "the model is still loading"
            raise NotReady(f"The model is not ready: {reason}", None)
        if schema is not self._schema_seen or self._model is None:
            try:
                self._model = read(schema, service.model_name,
                                   service.config.openai)
            except OverrideError as exc:
                raise APIError(500, str(exc), type_="server_error",
                               code="bad_configuration") from None
            self._schema_seen = schema
        return self._model

    @property
    def uploads(self) -> bool:
        """Output files go to --upload-url (their URLs are answered), not data: URLs."""
        return self.service.settings.upload_url is not None

    def errors(self, inputs: dict[str, Any]) -> list[FieldError]:
        """What the model's input validator says of `inputs` (empty: valid)."""
        self.service.check_accepting()
        return self.service.validate(inputs)

    def start(self, inputs: dict[str, Any], *, timeout: float | None,
              listener: Listener | None) -> Prediction:
        """Create the prediction for validated `inputs` (raises a `Refusal`)."""
        service = self.service
        return service.create(
            PredictionRequest(inputs, id=service.new_id(), timeout=timeout),
            listeners=[listener] if listener else None, remember=True)

    async def wait(self, prediction: Prediction, receive: Receive) -> bool:
        """Wait for the prediction's end; False (and canceled) if the client left first."""
        return await wait_or_cancel(self.service, prediction, receive)

    def cancel(self, prediction: Prediction) -> None:
        """The client went away: cancel the prediction if it still runs."""
        abandon(self.service, prediction)
