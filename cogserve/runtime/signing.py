"""Webhook signatures the Standard Webhooks way (https://www.standardwebhooks.com), as
Replicate's hosted API signs its deliveries, so a receiver can tell cogserve's from
anyone else's with any Standard Webhooks verifier.

The secret is `whsec_` + base64 of the key (COGSERVE_WEBHOOK_SECRET, checked at start by
`envvars.webhook_secret`). Each attempt carries three headers: `webhook-id` (one per
delivery: the same on every retry of it, so a receiver can drop a duplicate),
`webhook-timestamp` (the attempt's time, seconds since the epoch: a receiver refuses an
old one, so a captured delivery cannot be replayed later) and `webhook-signature`
(`v1,` + base64 of HMAC-SHA256 over `id.timestamp.body`).

Standard library only, and cheap: one HMAC per attempt, none without a secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time


class Signer:
    """Signs deliveries with one key (the decoded secret)."""

    __slots__ = ("key",)

    def __init__(self, key: bytes) -> None:
        self.key = key

    def headers(self, message_id: str, body: bytes, now: float | None = None
                ) -> dict[str, str]:
        """The three headers of one attempt to deliver `body` as `message_id`."""
        timestamp = str(int(time.time() if now is None else now))
        signed = b"%s.%s.%s" % (message_id.encode(), timestamp.encode(), body)
        digest = hmac.new(self.key, signed, hashlib.sha256).digest()
        return {"webhook-id": message_id, "webhook-timestamp": timestamp,
                "webhook-signature": "v1," + base64.b64encode(digest).decode()}
