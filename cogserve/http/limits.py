"""The limits a connection on an open port is held to (`http.connection`): how large and
how slow a request head may be, and how long a request body may stall."""

from __future__ import annotations

from dataclasses import dataclass

from cogserve.process.envvars import env_float, env_int


@dataclass(frozen=True)
class ConnectionLimits:
    max_head_bytes: int = 64 * 1024  # request line and headers: over it, 431
    max_headers: int = 100  # over it, 431
    head_timeout: float = 30.0  # seconds for a whole head to arrive, then closed
    body_timeout: float = 30.0  # seconds a body may stop arriving, then closed

    @classmethod
    def from_env(cls) -> ConnectionLimits:
        default = cls()
        return cls(
            max_head_bytes=env_int("COGSERVE_MAX_HEADER_BYTES", default.max_head_bytes)
            or default.max_head_bytes,
            max_headers=env_int("COGSERVE_MAX_HEADERS", default.max_headers)
            or default.max_headers,
            head_timeout=env_float("COGSERVE_HEADER_TIMEOUT", default.head_timeout)
            or default.head_timeout,
            body_timeout=env_float("COGSERVE_BODY_TIMEOUT", default.body_timeout)
            or default.body_timeout,
        )
