"""The ASGI vocabulary every front end is written in: Scope, Receive, Send, App.

One definition (as Starlette's `types.py`), so handler signatures say what they take
instead of `Any`. Messages stay dicts: ASGI defines them by their `type` key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
