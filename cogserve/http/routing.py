"""Routes as data, and the one matcher that Cog's routes (`http/app.py`) and the V2 mount
(`v2/routes.py`) share.

A route table maps a path pattern to its methods' handlers:

    {"/predictions": {"POST": create},
     "/predictions/{prediction_id}": {"PUT": put, "GET": get},
     "/predictions/{prediction_id}/cancel": {"POST": cancel},
     "/docs/{file:path}": {"GET": asset}}

A pattern's segments are literal text or a `{parameter}`, one non-empty segment; a last
`{name:path}` takes the rest of the path, slashes included, and may be empty. A path that
ends in `/` after a last `{parameter}` is the path without it (`/predictions/abc/`), as
the prefix router this table replaced answered it. A pattern's *template* is the pattern
without `:path` (`/docs/{file}`): what metrics, access logs and traces label a request
with, a small fixed set, never the ids themselves.

`Router.match(path)` is the one lookup of a request. Its `Match` holds the template, the
methods' handlers, the path parameters and, for a mounted front end, the ASGI app that
answers; the app leaves it in the scope (`ROUTE_KEY`), where the dispatch, the handlers
and the request observer read it, so nothing parses the path again. Choosing among the
methods (HEAD as GET, a 405 and its `Allow`) is each front end's own: their answers differ.

A mount is a prefix and an ASGI app (V2 at /v2, MCP at /mcp): it takes the prefix and
every path under it. Its template is the prefix, or, when the app has a `match(path)` of
its own (V2's, a `Router` of its own routes), the `Match` that gives.

Cost: a pattern without parameters is one dict lookup; the others are tried in table
order, each a `startswith` on its literal prefix and one compiled regular expression;
mounts come last.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

from cogserve.http.asgi import ASGIApp, Receive, Scope, Send

Handler = Callable[[Scope, Receive, Send], Awaitable[None]]
Table = Mapping[str, Mapping[str, Handler]]  # pattern -> method -> handler

ROUTE_KEY = "cogserve.route"  # the request's `Match`, in its ASGI scope
ANY = "*"  # a methods key: every method the route does not name
OTHER = "other"  # the template of a path no route matches
NO_PARAMS: Mapping[str, str] = MappingProxyType({})

_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(:path)?\}")


class Match(NamedTuple):
    """What a path matched: `template` (its label), `methods` (method -> handler; empty:
    no route), `params` (the path's parameters by name) and `app`, the mounted front end
    that answers it (None: the table's own handlers)."""

    template: str
    methods: Mapping[str, Handler]
    params: Mapping[str, str] = NO_PARAMS
    app: ASGIApp | None = None


# a Match built without NamedTuple's `__new__` (a Python function): once per request
_new_match = tuple.__new__


NOT_FOUND = Match(OTHER, MappingProxyType({}))


class Router:
    """A route table compiled for `match`, and the mounts tried after it. `app` is put in
    every `Match` of the table (a mounted front end's own router names itself)."""

    def __init__(self, table: Table, mounts: Sequence[tuple[str, ASGIApp]] = (),
                 app: ASGIApp | None = None) -> None:
        self.exact: dict[str, Match] = {}
        # (literal prefix, regular expression, template, methods) in table order
        self.patterns: list[tuple[str, re.Pattern[str], str, Mapping[str, Handler]]] = []
        self.app = app
        for pattern, methods in table.items():
            methods = MappingProxyType(dict(methods))
            first = _PARAM.search(pattern)
            if first is None:
                self.exact[pattern] = Match(pattern, methods, NO_PARAMS, app)
            else:
                regex, template = compile_pattern(pattern)
                self.patterns.append((pattern[:first.start()], regex, template, methods))
        # (prefix, prefix + "/", the app's own `match` or None, the Match of the whole mount)
        self.mounts: list[tuple[str, str, Callable[[str], Match] | None, Match]] = [
            (prefix, prefix + "/", getattr(mounted, "match", None),
             Match(prefix, MappingProxyType({}), NO_PARAMS, mounted))
            for prefix, mounted in mounts]

    def match(self, path: str) -> Match | None:
        """The route `path` takes, or None: no pattern and no mount has it."""
        found = self.exact.get(path)
        if found is not None:
            return found
        for prefix, regex, template, methods in self.patterns:
            if path.startswith(prefix):
                bound = regex.fullmatch(path)
                if bound is not None:
                    return _new_match(Match, (template, methods, bound.groupdict(), self.app))
        for prefix, under, own, whole in self.mounts:
            if path == prefix or path.startswith(under):
                return whole if own is None else own(path)
        return None


def compile_pattern(pattern: str) -> tuple[re.Pattern[str], str]:
    """A pattern's regular expression and its template; ValueError for a pattern that
    does not start with `/`, a parameter that is not a whole segment, a `:path` that is
    not last, or a name used twice."""
    if not pattern.startswith("/"):
        raise ValueError(f"route pattern {pattern!r} does not start with '/'")
    regex, names = [], []
    segments = pattern[1:].split("/")
    for index, segment in enumerate(segments):
        param = _PARAM.fullmatch(segment)
        if param is None:
            if "{" in segment or "}" in segment:
                raise ValueError(f"route pattern {pattern!r}: a parameter is a whole segment")
            regex.append("/" + re.escape(segment))
            continue
        name, rest = param.group(1), param.group(2) is not None
        if name in names:
            raise ValueError(f"route pattern {pattern!r} names {name!r} twice")
        names.append(name)
        last = index == len(segments) - 1
        if rest and not last:
            raise ValueError(f"route pattern {pattern!r}: only the last parameter takes :path")
        # a last parameter: one trailing slash is the path without it
        regex.append(f"/(?P<{name}>.*)" if rest else
                     f"/(?P<{name}>[^/]+)" + ("/?" if last else ""))
    return re.compile("".join(regex)), _PARAM.sub(r"{\1}", pattern)

