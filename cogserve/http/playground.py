"""The browser playground at /docs and /playground, served by cogserve itself.

`GET /` advertises `docs_url: /docs`; people would rather click than write curl, and a
playground on the same port needs nothing else installed or started. The page is plain
HTML, CSS and JavaScript modules shipped inside the package (`cogserve/playground/`, no
build step) and builds everything it shows from the API itself (`/openapi.json`,
`/health-check`, `/predictions`, `/v2`), so it works offline. The files are read once
when the app is built; `--no-playground` leaves the routes out.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any

import orjson

from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.responses import PlainError
from cogserve.http.routing import ROUTE_KEY, Handler

if TYPE_CHECKING:
    from cogserve.runtime.service import Service

ASSET_PREFIX = "/docs/"
ASSETS = ASSET_PREFIX + "{file:path}"  # the route of the files (template /docs/{file})
PAGES = ("/docs", "/playground")
_TYPES = {  # by suffix; JavaScript modules are refused by browsers under any other type
    ".html": b"text/html; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".js": b"text/javascript; charset=utf-8",
    ".json": b"application/json",
}
_SHIPPED = (".html", ".css", ".js")
# The page talks only to this server; outputs may be images, audio or video at an upload
# URL elsewhere, which the browser may show but never fetch from script.
_CSP = (b"default-src 'self'; img-src * data: blob:; media-src * data: blob:; "
        b"connect-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; "
        b"base-uri 'none'; form-action 'none'; frame-ancestors 'self'")


def load_assets() -> dict[str, bytes]:
    """The shipped files, by name (a missing page is a packaging error: fail at start)."""
    folder = resources.files("cogserve") / "playground"
    assets = {entry.name: entry.read_bytes() for entry in folder.iterdir()
              if entry.is_file() and _suffix(entry.name) in _SHIPPED}
    if "index.html" not in assets:
        raise RuntimeError(f"the playground's files are missing from {folder}")
    return assets


def _suffix(name: str) -> str:
    return name[name.rfind("."):] if "." in name else ""


class Playground:
    """The page, its static files and `/docs/playground.json` (what the schema lacks)."""

    def __init__(self, service: Service, max_body: int,
                 mcp: dict[str, Any] | None = None,
                 openai: Callable[[], dict[str, Any]] | None = None) -> None:
        """`mcp`: /mcp as the page shows it (`cogserve.mcp.page_settings`), None without;
        `openai`: /v1's facts, asked for each time (the model's shape follows its schema),
        None without."""
        self.service = service
        self.max_body = max_body
        self.mcp = mcp
        self.openai = openai
        self.assets = load_assets()

    async def page(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _send(send, "index.html", self.assets["index.html"])

    async def asset(self, scope: Scope, receive: Receive, send: Send) -> None:
        rest: str = scope[ROUTE_KEY].params["file"]  # what follows /docs/, maybe empty
        if rest == "":  # /docs/: the page's relative URLs need /docs
            await send({"type": "http.response.start", "status": 308,
                        "headers": [(b"location", b"../docs"), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if rest == "playground.json":
            await _send(send, "playground.json", orjson.dumps(self.settings()))
            return
        body = self.assets.get(rest) if rest != "index.html" else None
        if body is None:
            raise PlainError(404)
        await _send(send, rest, body)

    def settings(self) -> dict[str, Any]:
        """Facts about the server that /openapi.json does not carry; `mcp` (None with
        --no-mcp) for the page's MCP client config."""
        return {
            "model_name": self.service.model_name,
            "model_version": self.service.settings.model_version,
            "max_body_bytes": self.max_body,
            "mcp": self.mcp,
            "openai": self.openai() if self.openai is not None else None,
        }



async def _send(send: Any, name: str, body: bytes) -> None:
    headers = [
        (b"content-type", _TYPES[_suffix(name)]),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-cache"),  # a cogserve upgrade must not show a stale page
        (b"x-content-type-options", b"nosniff"),
    ]
    if name == "index.html":
        headers.append((b"content-security-policy", _CSP))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def routes(playground: Playground) -> dict[str, dict[str, Handler]]:
    """The page under /docs and /playground, and its files under /docs/ (GET; the app
    answers HEAD as GET and other methods 405)."""
    table: dict[str, dict[str, Handler]] = {path: {"GET": playground.page} for path in PAGES}
    table[ASSETS] = {"GET": playground.asset}
    return table
