"""The access line's record made from a template carries what makeRecord would give it."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from cogserve.observability import requests


@pytest.fixture
def no_lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # as `cogserve serve` sets them
    monkeypatch.setattr(logging, "logThreads", False)
    monkeypatch.setattr(logging, "logProcesses", False)
    monkeypatch.setattr(logging, "logMultiprocessing", False)
    monkeypatch.setattr(requests, "_template", None)
    # the standard record class, as in `serve`: a library imported by another test of the
    # session (Ray) may have installed a factory of its own, which takes the makeRecord path
    factory = logging.getLogRecordFactory()
    logging.setLogRecordFactory(logging.LogRecord)
    try:
        yield
    finally:
        logging.setLogRecordFactory(factory)


@pytest.mark.parametrize("level", [logging.INFO, logging.DEBUG])
def test_record_as_make_record(no_lookups: None, level: int) -> None:
    args = ("POST", "/predictions", 200, 1.5, " prediction abc")
    fields = {"method": "POST", "path": "/predictions", "status": 200}
    log = requests.access_log
    expected = log.makeRecord(log.name, level, requests.__file__, 0, requests._MESSAGE, args,
                              None, extra={"fields": fields}).__dict__
    record = requests._record(level, args, fields)
    assert type(record) is logging.LogRecord
    got = record.__dict__
    assert set(got) == set(expected)
    timing = {"created", "msecs", "relativeCreated"}
    assert {k: v for k, v in got.items() if k not in timing} == {
        k: v for k, v in expected.items() if k not in timing}
    assert abs(got["created"] - expected["created"]) < 1
    assert 0 <= got["msecs"] < 1000
    assert record.getMessage() == "POST /predictions 200 1.5 ms prediction abc"


def test_lookups_on_make_a_full_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logging, "logThreads", True)
    record = requests._record(logging.INFO, ("GET", "/", 200, 1.0, ""), {})
    assert record.thread is not None
