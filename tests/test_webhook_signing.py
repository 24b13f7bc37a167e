"""Signed webhooks (COGSERVE_WEBHOOK_SECRET): every attempt verified on the receiving side
by the `standardwebhooks` library's own verifier, the way a receiver would."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

import pytest
from harness import MODELS, free_port
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SECRET = "whsec_" + base64.b64encode(b"cogserve-test-key-0123456789abcd").decode()


def test_every_attempt_is_signed_and_a_retry_keeps_its_id(serve, receiver):
    server = serve("sleepy", env={"COGSERVE_WEBHOOK_SECRET": SECRET})
    hook = receiver(fail_first=2)  # the first delivery is tried three times
    r = server.client.post("/predictions", json={
        "input": {"text": "signed"}, "webhook": hook.url})
    assert r.json()["output"] == "SIGNED"
    bodies = hook.wait_for_terminal()
    assert bodies[-1]["status"] == "succeeded"
    verifier = Webhook(SECRET)
    for hit in hook.hits:
        assert verifier.verify(hit.raw, hit.headers) == hit.body
        assert hit.headers["webhook-signature"].startswith("v1,")
    ids = [hit.headers["webhook-id"] for hit in hook.hits]
    # two failed attempts and the delivery of the start event: one id; then new ones
    assert ids[0] == ids[1] == ids[2]
    assert len(set(ids[2:])) == len(ids[2:]) >= 2
    # another key, or a changed body, does not verify
    other = Webhook("whsec_" + base64.b64encode(b"another-key-another-key!").decode())
    with pytest.raises(WebhookVerificationError):
        other.verify(hook.hits[-1].raw, hook.hits[-1].headers)
    with pytest.raises(WebhookVerificationError):
        verifier.verify(hook.hits[-1].raw.replace(b"SIGNED", b"FORGED"), hook.hits[-1].headers)


def test_without_a_secret_nothing_is_signed(serve, receiver):
    server = serve("sleepy")
    hook = receiver()
    server.client.post("/predictions", json={
        "input": {"text": "plain"}, "webhook": hook.url, "webhook_events_filter": ["completed"]})
    hook.wait_for_terminal()
    assert not any(name.startswith("webhook-") for name in hook.hits[0].headers)


@pytest.mark.parametrize("value, says", [
    ("secret", "does not start with 'whsec_'"),
    ("whsec_not base64!", "is not whsec_ followed by base64"),
    ("whsec_" + base64.b64encode(b"short").decode(), "at least 16 bytes"),
])
def test_a_bad_secret_stops_the_server_at_start(value, says):
    env = {**os.environ, "COGSERVE_WEBHOOK_SECRET": value}
    done = subprocess.run(
        [sys.executable, "-m", "cogserve.cli", "serve", str(MODELS / "sleepy"),
         "--host", "127.0.0.1", "--port", str(free_port())],
        env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "COGSERVE_WEBHOOK_SECRET" in done.stderr and says in done.stderr
    assert value not in done.stderr or value == "secret"  # the key itself is not printed
