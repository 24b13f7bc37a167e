"""Watch every HTTP request once, around the router: metrics, the access log, traces.

One wrapper sees the status the response started with and the time to its last byte,
so the route handlers stay unaware of it. The access log is one structured line per
request (method, route template, status, duration, prediction id) at INFO; probes
(health checks, readiness) and metric scrapes are logged at DEBUG so they do not flood
the log.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING, Any

from cogserve.http.asgi import Message, Receive, Scope, Send
from cogserve.http.cycle import Cycle
from cogserve.http.responses import PREDICTION_KEY
from cogserve.http.routing import ROUTE_KEY
from cogserve.process.log_writer import sole_handler

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from cogserve.http.app import Handler
    from cogserve.observability.metrics import Metrics
    from cogserve.observability.tracing import Tracing

access_log = logging.getLogger("cogserve.access")

QUIET_ROUTES = frozenset({"/health-check", "/metrics", "/v2/health/live", "/v2/health/ready",
                          "/v2/models/{model_name}/ready",
                          "/v2/models/{model_name}/versions/{model_version}/ready"})


class RequestObserver:
    """Passed to the `App`, which puts it around its router (`around`) as `App.handle`."""

    def __init__(self) -> None:
        self.inner: Handler | None = None  # the router (`App.respond`)
        self.metrics: Metrics | None = None  # set once built (after the worker started)
        self.tracing: Tracing | None = None  # set when OpenTelemetry tracing is on

    def around(self, respond: Handler) -> RequestObserver:
        """Observe `respond`, the app's router. The request's route is already matched: its
        template (`/predictions/{prediction_id}`) is in the scope (`ROUTE_KEY`)."""
        self.inner = respond
        return self

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        # no answer started: the client went away first (a sync prediction's client that
        # disconnects); logged and counted as nginx does, 499 "client closed request"
        status = 499
        # cogserve's own HTTP server keeps the status the app started its answer with
        # (`Cycle.status`, 499 before one); under another (Ray's), `send` is wrapped
        cycle = getattr(send, "__self__", None)
        if type(cycle) is not Cycle:
            cycle = None
            server_send = send  # not `send`: rebound below, and this closure would see that

            def observed_send(message: Message) -> Awaitable[None]:
                # a plain function handing back send's awaitable: no coroutine of its own
                # wrapped around each send
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                return server_send(message)

            send = observed_send

        route: str = scope[ROUTE_KEY].template
        tracing = self.tracing
        traced = None  # probes and scrapes are not traced: they would bury the traces
        if tracing is not None and route not in QUIET_ROUTES:
            traced = tracing.start_request(scope)
        try:
            assert self.inner is not None
            await self.inner(scope, receive, send)
        finally:
            seconds = time.perf_counter() - started
            if cycle is not None:
                status = cycle.status
            method = scope["method"]
            if self.metrics is not None:
                self.metrics.observe_request(route, method, status, seconds)
            level = logging.DEBUG if route in QUIET_ROUTES else logging.INFO
            if access_log.isEnabledFor(level):
                _log_access(level, scope, route, method, status, seconds)
            if tracing is not None and traced is not None:
                tracing.end_request(traced, route, status)
            # the prediction goes with the request: the server's per-connection objects
            # (protocol, transport, request cycle) hold each other and the last scope
            # until the garbage collector's rare full pass, and with it every output and
            # final JSON (a 50 MiB file's data URL kept 134 MB per request, bench 5)
            scope.pop(PREDICTION_KEY, None)


def _log_access(level: int, scope: Scope, route: str, method: str, status: int,
                seconds: float) -> None:
    prediction = scope.get(PREDICTION_KEY)
    ident = prediction.id if prediction is not None else None
    handler = sole_handler(access_log, level) if _templated() else None
    if handler is not None:  # the line is rendered by the log writer's thread
        handler.defer(_render, (level, method, route, status, seconds, ident,
                                time.time_ns() if _NS_CLOCK else time.time()))
        return
    access_log.handle(_record(level, *_content(method, route, status, seconds, ident)))


def _render(formatter: logging.Formatter, level: int, method: str, route: str, status: int,
            seconds: float, ident: str | None, created: float | int) -> str:
    """The access line as `formatter` formats its record, rendered by the log writer's
    thread: what it says, and when it was logged. A formatter with `format_parts` (the
    server's own) writes the line from its parts, without the record."""
    args, fields = _content(method, route, status, seconds, ident)
    parts = getattr(formatter, "format_parts", None)
    if parts is not None:
        stamp, msecs = _stamp(created)
        line: str | None = parts(stamp, msecs, logging.getLevelName(level), access_log.name,
                                 _MESSAGE % args, fields)
        if line is not None:
            return line
    return formatter.format(_record(level, args, fields, created))


def _content(method: str, route: str, status: int, seconds: float, ident: str | None
             ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The access record's arguments (of `_MESSAGE`) and structured fields."""
    return ((method, route, status, seconds * 1000, f" prediction {ident}" if ident else ""),
            {"method": method, "path": route, "status": status,
             "duration_s": round(seconds, 6), "prediction_id": ident})


_MESSAGE = "%s %s %d %.1f ms%s"
_template: dict[str, Any] | None = None  # an access record's attributes that never change
_NS_CLOCK = sys.version_info >= (3, 13)  # LogRecord's clock: time_ns() from 3.13 on
_TASKS_LOOKED_UP = sys.version_info >= (3, 12)  # records name their asyncio task from 3.12 on


def _templated() -> bool:
    """Whether `_record` copies its template: no record attribute is looked up per record
    (the thread, process or task that logs it, or a record factory of the application's),
    so the record can be made on another thread, later, and say the same."""
    return not (logging.logThreads or logging.logProcesses or logging.logMultiprocessing
                or (_TASKS_LOOKED_UP and logging.logAsyncioTasks)  # type: ignore[attr-defined]
                or logging.getLogRecordFactory() is not logging.LogRecord)


def _record(level: int, args: tuple[Any, ...], fields: dict[str, Any],
            created: float | int | None = None) -> logging.LogRecord:
    """The access line's record, with the attributes `Logger.makeRecord` would give it
    (stamped `created`, the time it was logged, when given: `time.time()`, or
    `time.time_ns()` where LogRecord takes that clock; else now).

    makeRecord + handle is Logger.log without the caller lookup (which walks the stack);
    where no record attribute is looked up per record (`serve` turns off the thread,
    process and task lookups, which no format of its own shows), the record is a copy of
    a template made once, with its level, arguments, time and fields set: a LogRecord's
    __init__ (basename and splitext of the source path, the level's name, ...) and
    makeRecord's checks of `extra` cost ~3/4 of the access line on the event loop.
    """
    global _template
    if not _templated():
        record = access_log.makeRecord(access_log.name, level, __file__, 0, _MESSAGE, args,
                                       None, extra={"fields": fields})
        if created is None:
            return record
        attributes = record.__dict__
    else:
        if _template is None:
            _template = access_log.makeRecord(access_log.name, logging.INFO, __file__, 0,
                                              _MESSAGE, (), None).__dict__.copy()
        record = logging.LogRecord.__new__(logging.LogRecord)
        record.__dict__ = attributes = _template.copy()
        if level != logging.INFO:
            attributes["levelno"] = level
            attributes["levelname"] = logging.getLevelName(level)
        attributes["args"] = args
        attributes["fields"] = fields
    # as LogRecord.__init__ stamps the time
    if created is None:
        created = time.time_ns() if _NS_CLOCK else time.time()
    attributes["created"], attributes["msecs"] = _stamp(created)
    if _NS_CLOCK:
        attributes["relativeCreated"] = (created - logging._startTime) / 1e6  # type: ignore[attr-defined]
    else:
        attributes["relativeCreated"] = (created - logging._startTime) * 1000  # type: ignore[attr-defined]
    return record


def _stamp(created: float | int) -> tuple[float, float]:
    """A record's `created` and `msecs`, as LogRecord.__init__ computes them from the
    clock it reads (`time.time()`, or `time.time_ns()` from 3.13 on)."""
    if _NS_CLOCK:
        ns = int(created)
        return ns / 1e9, (ns % 1_000_000_000) // 1_000_000 + 0.0
    return created, int((created - int(created)) * 1000) + 0.0
