"""The access line handed to the log writer's thread (`BackgroundLogHandler.defer`) is
written exactly as the record logged through `Logger.handle` would be; anything between
the access logger and the writer (a filter, another handler) gets the record as before."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import orjson
import pytest

from cogserve.cli import main as cli
from cogserve.observability import requests
from cogserve.process.log_writer import BackgroundLogHandler, sole_handler


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[BackgroundLogHandler]:
    """Logging as `cogserve serve` sets it up, writing to a string."""
    root = logging.getLogger("cogserve")
    saved = (root.handlers[:], root.level, root.propagate)
    factory = logging.getLogRecordFactory()
    logging.setLogRecordFactory(logging.LogRecord)
    for flag in ("logThreads", "logProcesses", "logMultiprocessing"):
        monkeypatch.setattr(logging, flag, getattr(logging, flag))
    monkeypatch.setattr(requests, "_template", None)
    monkeypatch.setenv("LOG_FORMAT", "console")
    monkeypatch.delenv("COG_LOG_LEVEL", raising=False)
    cli._configure_logging(background=True)
    handler = root.handlers[0]
    assert isinstance(handler, BackgroundLogHandler)
    handler.stream = io.StringIO()
    try:
        yield handler
    finally:
        handler.flush()
        root.handlers[:], root.level, root.propagate = saved
        logging.setLogRecordFactory(factory)


def _alone(handler: BackgroundLogHandler) -> None:
    """pytest's log capture adds its handlers around each test's call: taken off, as a
    server has none."""
    logging.getLogger("cogserve").handlers[:] = [handler]


def _expected(handler: BackgroundLogHandler, level: int, status: int, ident: str | None,
              seconds: float) -> str:
    args, fields = requests._content("POST", "/predictions", status, seconds, ident)
    record = requests._record(level, args, fields)
    formatter = handler.formatter
    assert formatter is not None
    # the standard library's format, with cogserve's timestamp
    return logging.Formatter.format(formatter, record)


def _line(handler: BackgroundLogHandler) -> str:
    handler.flush()
    assert isinstance(handler.stream, io.StringIO)
    return handler.stream.getvalue()


@pytest.mark.parametrize("ident", [None, "abc"])
def test_the_deferred_line_is_the_line_the_record_makes(served: BackgroundLogHandler,
                                                        ident: str | None) -> None:
    _alone(served)
    assert sole_handler(requests.access_log, logging.INFO) is served

    class Prediction:
        id = ident

    scope = {requests.PREDICTION_KEY: Prediction() if ident else None}
    requests._log_access(logging.INFO, scope, "/predictions", "POST", 409, 0.000412)
    written = _line(served)
    expected = _expected(served, logging.INFO, 409, ident, 0.000412)
    # the same line but for the time (taken a moment apart): compare past the timestamp
    assert written.endswith("\n")
    assert written[:-1].split(" ", 2)[2] == expected.split(" ", 2)[2]
    assert written.split(" ", 2)[2].startswith("INFO cogserve.access: POST /predictions 409 0.4 ms")


def test_the_json_line_carries_the_same_fields(served: BackgroundLogHandler) -> None:
    _alone(served)
    served.setFormatter(cli._JSONFormatter())
    requests._log_access(logging.INFO, {}, "/predictions", "POST", 200, 0.0015)
    doc = orjson.loads(_line(served))
    assert {k: v for k, v in doc.items() if k != "timestamp"} == {
        "severity": "INFO", "logger": "cogserve.access",
        "message": "POST /predictions 200 1.5 ms", "method": "POST", "path": "/predictions",
        "status": 200, "duration_s": 0.0015, "prediction_id": None}


def test_a_filter_on_the_access_logger_sees_every_record(served: BackgroundLogHandler) -> None:
    seen: list[logging.LogRecord] = []

    def keep(record: logging.LogRecord) -> bool:
        seen.append(record)
        return True

    _alone(served)
    requests.access_log.addFilter(keep)
    try:
        assert sole_handler(requests.access_log, logging.INFO) is None
        requests._log_access(logging.INFO, {}, "/predictions", "POST", 409, 0.001)
    finally:
        requests.access_log.removeFilter(keep)
    assert [r.getMessage() for r in seen] == ["POST /predictions 409 1.0 ms"]
    assert "POST /predictions 409 1.0 ms" in _line(served)


def test_another_handler_gets_the_record_too(served: BackgroundLogHandler) -> None:
    class Keep(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.records: list[logging.LogRecord] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.records.append(record)

    _alone(served)
    other = Keep()
    requests.access_log.addHandler(other)
    try:
        requests._log_access(logging.INFO, {}, "/predictions", "POST", 200, 0.001)
    finally:
        requests.access_log.removeHandler(other)
    assert [r.getMessage() for r in other.records] == ["POST /predictions 200 1.0 ms"]
    assert "POST /predictions 200 1.0 ms" in _line(served)


def test_with_thread_lookups_on_the_record_is_made_where_it_is_logged(
        served: BackgroundLogHandler, monkeypatch: pytest.MonkeyPatch) -> None:
    _alone(served)
    monkeypatch.setattr(logging, "logThreads", True)
    served.setFormatter(logging.Formatter("%(threadName)s %(message)s"))
    requests._log_access(logging.INFO, {}, "/predictions", "POST", 200, 0.001)
    import threading

    assert _line(served) == f"{threading.current_thread().name} POST /predictions 200 1.0 ms\n"


@pytest.mark.parametrize("formatter", [cli._Formatter(cli._CONSOLE), cli._JSONFormatter()])
def test_a_line_from_its_parts_is_the_line_of_its_record(formatter: logging.Formatter) -> None:
    for created in (1_790_000_000.0, 1_790_000_000.999_9, 1_790_000_001.000_4, 1_790_000_061.5):
        for ident in (None, "abc"):
            args, fields = requests._content("POST", "/predictions", 200, 0.0012, ident)
            record = requests._record(logging.INFO, args, fields, created)
            line = requests._render(formatter, logging.INFO, "POST", "/predictions", 200,
                                    0.0012, ident, created)
            assert line == formatter.format(record)


def test_a_formatter_without_parts_formats_the_record() -> None:
    formatter = logging.Formatter("%(levelname)s|%(name)s|%(message)s|%(msecs)03d")
    line = requests._render(formatter, logging.INFO, "GET", "/", 404, 0.0001, None,
                            1_790_000_000.25)
    assert line == "INFO|cogserve.access|GET / 404 0.1 ms|250"
