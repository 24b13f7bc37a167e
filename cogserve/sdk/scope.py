"""The per-prediction scope a model reaches through `current_scope()` or `self.scope`.

The worker binds a scope to each running prediction through a context variable, so
with several async predictions in flight each one records into its own metrics.
Outside a prediction the calls do nothing, as Cog documents.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, MutableMapping
from typing import Any

from cogserve.sdk.custom_metrics import apply_metric, parse_mode

MetricSink = Callable[[str, Any, str], None]


class _Metrics(MutableMapping[str, Any]):
    """`scope.metrics[name] = v` / `del scope.metrics[name]` sugar over record_metric."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def __getitem__(self, name: str) -> Any:
        node: Any = self._scope.values
        for part in name.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(name)
            node = node[part]
        return node

    def __setitem__(self, name: str, value: Any) -> None:
        self._scope.record_metric(name, value, "replace")

    def record(self, name: str, value: Any, mode: str | None = None) -> None:
        """`scope.metrics.record(name, value, mode=...)`, as the reference's scope offers."""
        self._scope.record_metric(name, value, mode)

    def __delitem__(self, name: str) -> None:
        if self._scope.inactive:
            return
        self[name]  # noqa: B018 - raise KeyError for an absent metric, like a dict
        self._scope.record_metric(name, None, "replace")

    def __iter__(self) -> Any:
        return iter(self._scope.values)

    def __len__(self) -> int:
        return len(self._scope.values)


class Scope:
    """Metrics of one prediction; `sink` forwards each recorded value to the parent."""

    def __init__(self, sink: MetricSink | None = None,
                 context: dict[str, str] | None = None) -> None:
        self.values: dict[str, Any] = {}
        self.context: dict[str, str] = dict(context or {})  # the request's `context` object
        self._sink = sink

    @functools.cached_property
    def metrics(self) -> _Metrics:
        """Made on first use: a scope is made for every prediction, and few ask for it."""
        return _Metrics(self)

    @property
    def inactive(self) -> bool:
        """True outside a prediction, where metric calls do nothing."""
        return self._sink is None

    def record_metric(self, name: str, value: Any, mode: str | None = "replace") -> None:
        if self._sink is None:
            return
        canonical = parse_mode(mode)  # the parent and SSE see the reference's mode names
        apply_metric(self.values, name, value, canonical)
        self._sink(name, value, canonical)


_NULL_SCOPE = Scope()
_current: contextvars.ContextVar[Scope] = contextvars.ContextVar("cogserve_scope")
# Scopes of the predictions running now. A thread the model starts itself does not inherit
# the context variable; when exactly one prediction runs (every sync model), it is the one.
_active: list[Scope] = []


def current_scope() -> Scope:
    """The scope of the prediction running in this context (a no-op scope outside one)."""
    scope = _current.get(None)
    if scope is not None:
        return scope
    return _active[0] if len(_active) == 1 else _NULL_SCOPE


def bind_scope(scope: Scope) -> contextvars.Token[Scope]:
    _active.append(scope)
    return _current.set(scope)


def unbind_scope(token: contextvars.Token[Scope]) -> None:
    try:
        _active.remove(token.var.get())
    except ValueError:
        pass
    _current.reset(token)
