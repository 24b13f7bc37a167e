"""Attach optional front-end features to the app: webhooks, SSE streaming, the V2 protocol.

Each feature lives in its own module and registers itself here, so `app.py` stays a
router and the hot path pays nothing for features a request does not use.
"""

from __future__ import annotations

from typing import Any


def install(app: Any) -> None:
    """Called once when the app is built."""
    return None
