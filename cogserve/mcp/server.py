"""The MCP endpoint itself: the official SDK's low-level `Server` and its Streamable HTTP
session manager, answering under /mcp with the model's tools.

Imported only when the first request reaches /mcp (`cogserve.mcp.MCPMount`), so a server
whose clients never speak MCP never loads the SDK.

Stateful sessions, not the manager's stateless mode: through protocol 2025-11-25 a
client cancels a call with `notifications/cancelled`, a POST of its own that must reach
the session running the call; a stateless server answers each POST with a new transport
that knows no earlier request, so the cancel would be lost and the model would run on.
Sessions live in this process (one per client, ended by the client's DELETE, after
`SESSION_IDLE_SECONDS` without a request, or at shutdown); behind several replicas a
client must stay on one (sticky routing). Protocol 2026-07-28 clients need no session:
the SDK serves each of their POSTs on its own, and closing the response cancels.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import mcp.types as types
import orjson
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

import cogserve
from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.deadline import request_timeout
from cogserve.http.responses import PREDICTION_KEY, RequestError
from cogserve.mcp.runtime import MCPRuntime
from cogserve.mcp.tools import Tool, error_result, result_of
from cogserve.model.verdicts import InputError
from cogserve.runtime.errors import Refusal
from cogserve.runtime.prediction import Prediction
from cogserve.wire.states import Event

log = logging.getLogger("cogserve")

SESSION_IDLE_SECONDS = 30 * 60.0
CLOSE_SECONDS = 5.0  # at shutdown, for the calls still answering to send their results


class Endpoint:
    """The SDK's server and session manager for one `Runtime`; an ASGI app."""

    def __init__(self, runtime: MCPRuntime, max_body: int) -> None:
        self.runtime = runtime
        self.server: Server[Any] = Server(
            runtime.model_name, version=cogserve.__version__,
            description=f"The model {runtime.model_name}, served by cogserve",
            on_list_tools=self._list_tools, on_call_tool=self._call_tool)
        self.server.middleware.clear()  # its OpenTelemetry span per message: cogserve's own
        self.manager = StreamableHTTPSessionManager(
            self.server, max_request_body_size=max_body,
            session_idle_timeout=SESSION_IDLE_SECONDS)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._calls: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        """Run the session manager (its task group holds every session) in a task of its
        own until `stop`."""
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def run() -> None:
            async with self.manager.run():
                started.set_result(None)
                await self._stop.wait()

        def ended(task: asyncio.Task[None]) -> None:
            if not started.done():
                failure = None if task.cancelled() else task.exception()
                started.set_exception(failure or RuntimeError("the MCP session manager ended"))

        self._task = asyncio.create_task(run())
        self._task.add_done_callback(ended)
        await started

    async def stop(self) -> None:
        """Give calls still answering a moment to send their results, then end every
        session (open GET streams included, or the HTTP server would wait on them)."""
        if self._calls:
            await asyncio.wait(list(self._calls), timeout=CLOSE_SECONDS)
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)

    # ------------------------------------------------------------ handlers

    async def _list_tools(self, ctx: ServerRequestContext[Any],
                          params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        try:
            tools = self.runtime.tools()
        except Refusal as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        return types.ListToolsResult.model_validate(
            {"tools": [tool.definition() for tool in tools.values()]})

    async def _call_tool(self, ctx: ServerRequestContext[Any],
                         params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            tool = self.runtime.tools().get(params.name)
        except Refusal as exc:
            return _result(error_result(str(exc)))
        if tool is None:  # a protocol error, as the spec has it for an unknown tool
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name!r}; "
                           f"this server has {', '.join(self.runtime.tools())}")
        task = asyncio.current_task()
        assert task is not None
        self._calls.add(task)
        try:
            return await self._run(ctx, tool, params.arguments or {})
        finally:
            self._calls.discard(task)

    async def _run(self, ctx: ServerRequestContext[Any], tool: Tool,
                   arguments: dict[str, Any]) -> types.CallToolResult:
        try:
            timeout = _timeout(ctx)
        except RequestError as exc:  # a bad X-Prediction-Timeout header
            return _result(error_result(exc.message))
        progress = Progress(ctx) if progress_token_from_params(ctx.params) is not None else None
        try:
            prediction = self.runtime.start(
                tool, arguments, timeout=timeout,
                listener=progress.listener if progress is not None else None)
        except BaseException as exc:
            if progress is not None:
                progress.close()
            if isinstance(exc, InputError | Refusal):
                return _result(error_result(str(exc)))
            raise
        scope = _scope(ctx)
        if scope is not None:  # the access log line names the prediction, as for Cog's routes
            scope[PREDICTION_KEY] = prediction
        try:
            # shielded: cancelling this call must not cancel the future others await
            await asyncio.shield(prediction.done)
            if progress is not None:
                await progress.flush()
        except asyncio.CancelledError:  # notifications/cancelled, or the client went away
            self.runtime.cancel(prediction)
            raise
        finally:
            if progress is not None:
                progress.close()
        return _result(result_of(tool, prediction.to_dict()))


class Progress:
    """A prediction's log lines and streamed outputs as MCP progress notifications, in
    order: the prediction's listener queues them (it may not await), one task sends them."""

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        self.ctx = ctx
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.sender = asyncio.create_task(self._send())

    def listener(self, prediction: Prediction, event: Event, payload: dict[str, Any]) -> None:
        if event is Event.LOG:
            self.queue.put_nowait(payload["data"].rstrip("\n"))
        elif event is Event.OUTPUT:
            chunk = payload["chunk"]
            self.queue.put_nowait(chunk if isinstance(chunk, str) else orjson.dumps(chunk).decode())

    async def _send(self) -> None:
        count = 0
        while (message := await self.queue.get()) is not None:
            count += 1
            await self.ctx.session.report_progress(count, None, message)

    async def flush(self) -> None:
        """Send what is queued before the result goes."""
        self.queue.put_nowait(None)
        await self.sender

    def close(self) -> None:
        self.sender.cancel()


def _scope(ctx: ServerRequestContext[Any]) -> Scope | None:
    """The ASGI scope of the POST that carries the call (the SDK passes its request)."""
    scope = getattr(ctx.request, "scope", None)
    return scope if isinstance(scope, dict) else None


def _timeout(ctx: ServerRequestContext[Any]) -> float | None:
    """The call's deadline from the POST's `X-Prediction-Timeout` header, as on Cog's
    routes (capped by --predict-timeout)."""
    scope = _scope(ctx)
    return request_timeout(scope) if scope is not None else None


def _result(document: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult.model_validate(document)
