"""What a server makes of a dead one's records (runtime/store/recovery.py), in process: the
stored request's round trip, a running record ended `failed`, and which terminal
webhook it gets (the server tests kill real servers for the whole story)."""

from __future__ import annotations

import orjson

from cogserve.runtime.request import PredictionRequest
from cogserve.runtime.store.interface import Hook, Record, Stage
from cogserve.runtime.store.recovery import (
    STOPPED,
    Recovery,
    decode_request,
    encode_request,
    finished_failed,
)
from cogserve.wire.protocol import Mode
from cogserve.wire.states import WebhookEvent


def running(request: PredictionRequest | None) -> Record:
    body = orjson.dumps({"id": "r1", "status": "processing", "input": {"a": 1},
                         "output": ["partial"], "error": None, "logs": "x\n",
                         "created_at": "2026-01-01T00:00:00+00:00", "completed_at": None})
    return Record("r1", "prediction", "processing", Stage.RUNNING, 5.0, body, None,
                  encode_request(request) if request is not None else None)


def test_a_stored_request_comes_back_as_it_was_accepted():
    request = PredictionRequest(
        {"text": "t", "n": [1, 2]}, mode=Mode.TRAIN, webhook="http://h/hook",
        webhook_events_filter=frozenset({WebhookEvent.COMPLETED, WebhookEvent.LOGS}),
        output_file_prefix="http://up/", context={"traceparent": "00-ab-cd-01"},
        model_context={"k": "v"}, timeout=2.5)
    assert decode_request(encode_request(request)) == (request, True)
    bare = PredictionRequest({})
    assert decode_request(encode_request(bare)) == (bare, True)
    too_big = PredictionRequest({"a": 1}, webhook="http://h/hook")  # the webhook is kept
    assert decode_request(encode_request(too_big, keep_input=False)) == \
        (PredictionRequest({}, webhook="http://h/hook"), False)


def test_a_record_that_was_running_ends_failed_saying_why():
    record = running(PredictionRequest({"a": 1}, webhook="http://h/hook"))
    final = finished_failed(record, STOPPED)
    body = orjson.loads(final.body)
    assert final.stage is Stage.FINISHED and final.status == "failed"
    assert body["status"] == "failed" and body["error"] == STOPPED
    assert body["output"] is None and body["logs"] == "x\n"  # what it printed stays
    assert body["completed_at"] and final.finished is not None
    assert final.created == record.created and final.request == record.request


def test_its_terminal_webhook_follows_what_was_pending_and_honours_the_filter():
    recovery = Recovery.__new__(Recovery)  # _terminal_hook needs no service
    pending = [Hook("r1", 10**20, "start", "http://h/hook", b"{}")]
    final = finished_failed(running(PredictionRequest(
        {}, webhook="http://h/hook", context={"traceparent": "t"})), STOPPED)
    hook = recovery._terminal_hook(final, pending)
    assert hook is not None and hook.seq > pending[0].seq and hook.delivery == "completed"
    assert hook.url == "http://h/hook" and hook.body == final.body
    assert orjson.loads(hook.headers) == {"traceparent": "t"}
    filtered = finished_failed(running(PredictionRequest(
        {}, webhook="http://h/hook", webhook_events_filter=frozenset({WebhookEvent.START}))),
        STOPPED)
    assert recovery._terminal_hook(filtered, []) is None
    no_hook = finished_failed(running(PredictionRequest({})), STOPPED)
    assert recovery._terminal_hook(no_hook, []) is None
