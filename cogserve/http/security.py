"""Optional access control: a bearer token for every route but health and metrics, and
a switch that turns `POST /shutdown` off.

By default cogserve behaves as Cog does: anyone who can reach the port may run
predictions, read the schema and stop the server (a fuzzer did). These options are for
a port that untrusted clients can reach. Health (`/health-check`, `/v2/health/*`) and
`/metrics` stay open, so probes and scrapers need no secret.
"""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from typing import Any

from cogserve.http.asgi import Scope
from cogserve.http.responses import HTTPError
from cogserve.process.envvars import env_switch, env_text

log = logging.getLogger("cogserve")

OPEN_PATHS = frozenset({"/health-check", "/metrics", "/v2/health/live", "/v2/health/ready"})


@dataclass(frozen=True)
class AccessConfig:
    token: str | None = None  # COGSERVE_AUTH_TOKEN
    shutdown_route: bool = True  # COGSERVE_DISABLE_SHUTDOWN_ROUTE=1 turns it off

    @classmethod
    def from_env(cls) -> AccessConfig:
        token = env_text("COGSERVE_AUTH_TOKEN") or None
        return cls(token=token,
                   shutdown_route=not env_switch("COGSERVE_DISABLE_SHUTDOWN_ROUTE", False))


class BearerGuard:
    """Refuses a request without `Authorization: Bearer <token>` (401)."""

    def __init__(self, token: str) -> None:
        self.expected = f"Bearer {token}".encode()
        self.open_paths = set(OPEN_PATHS)

    def allow(self, *paths: str) -> None:
        """Leave these paths open too (the playground's page and files: a browser cannot
        send a header when it opens a page, and they hold nothing of the server's)."""
        self.open_paths.update(paths)

    def __call__(self, scope: Scope) -> None:
        if scope["path"] in self.open_paths:
            return
        for name, value in scope["headers"]:
            if name == b"authorization":
                if hmac.compare_digest(value, self.expected):
                    return
                break
        raise HTTPError(401, {"error": "Unauthorized: send the server's token as "
                                       "`Authorization: Bearer <token>`"},
                        [(b"www-authenticate", b'Bearer realm="cogserve"')])


async def _shutdown_disabled(*_: Any) -> None:
    raise HTTPError(403, {"error": "POST /shutdown is disabled on this server "
                                   "(COGSERVE_DISABLE_SHUTDOWN_ROUTE); stop it with SIGTERM"})


def guard(config: AccessConfig) -> BearerGuard | None:
    """The app's guard: the bearer token check, when a token is set."""
    return BearerGuard(config.token) if config.token else None


def routes(config: AccessConfig) -> dict[str, dict[str, Any]]:
    """Routes this config replaces: /shutdown answers 403 when it is switched off."""
    return {} if config.shutdown_route else {"/shutdown": {"POST": _shutdown_disabled}}
