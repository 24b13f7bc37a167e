"""Everything the MCP front end asks of the runtime, in one place.

A tool call is a prediction made the way `POST /predictions` makes one: the server
must be accepting, the arguments pass the model's own `InputValidator` (worded as
`cogserve predict` words its refusals, which name the field), and `Service.create`
queues it or gives it a slot, with its deadline, metrics and logs; it is remembered, so
`GET /predictions/{id}` shows it too. Nothing else in `cogserve.mcp` touches the
`Service`, so a change to the runtime's calls is a change here only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from cogserve.http.disconnect import abandon
from cogserve.mcp.tools import Tool, tools_of
from cogserve.model.verdicts import check_inputs
from cogserve.runtime.errors import NotReady
from cogserve.runtime.prediction import Listener, Prediction
from cogserve.runtime.request import PredictionRequest
from cogserve.runtime.service import Service


class MCPRuntime:
    """The model's tools and the predictions that run them, on one `Service`."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._tools: dict[str, Tool] = {}
        self._schema_seen: Any = None

    @property
    def model_name(self) -> str:
        return self.service.model_name

    def tools(self) -> dict[str, Tool]:
        """The tools by name; built again when a (re)started worker reports its schema.
        Raises NotReady while no worker has reported one."""
        service = self.service
        schema = service.schema
        if schema is None:
            reason = service.fatal_reason or "the model is still loading"
            raise NotReady(f"The model's tools are not available yet: {reason}", None)
        if schema is not self._schema_seen:
            self._tools = {tool.name: tool
                           for tool in tools_of(schema, service.model_name,
                                                service.descriptions)}
            self._schema_seen = schema
        return self._tools

    def start(self, tool: Tool, arguments: dict[str, Any], *, timeout: float | None,
              listener: Listener | None) -> Prediction:
        """Validate and create the prediction (raises `Refusal`, or `InputError` naming
        the fields that are wrong)."""
        service = self.service
        service.check_accepting()
        check_inputs(arguments, service.validator(tool.mode))
        return service.create(
            PredictionRequest(arguments, id=service.new_id(), mode=tool.mode, timeout=timeout),
            listeners=[listener] if listener else None, remember=True)

    def cancel(self, prediction: Prediction) -> None:
        """The call was cancelled: cancel its prediction if it still runs (the model gets
        the cancel as for `POST /predictions/{id}/cancel`)."""
        abandon(self.service, prediction)

    def on_shutdown(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run `hook` once in-flight predictions have drained at shutdown."""
        self.service.on_drain.append(hook)
