"""Predictions waiting for a free slot (`--queue-size N`): bounded, first in first out.

Cog answers 409 the moment every slot is busy; with a queue a prediction that finds no
free slot waits here instead. The backlog only holds them and their timers: `Service`
decides when one leaves (a slot freed, a cancel, the queue timeout), and for a `@batch`
model the `Batcher` decides how many leave together.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from cogserve.runtime.prediction import Prediction


class Backlog:
    def __init__(self, capacity: int, timeout: float | None,
                 on_timeout: Callable[[Prediction], None]) -> None:
        self.capacity = capacity
        self.timeout = timeout
        self._on_timeout = on_timeout
        # id -> (prediction, predict message, queue-timeout timer, when it came: loop time)
        self._waiting: OrderedDict[str, tuple[Prediction, dict[str, Any],
                                              asyncio.TimerHandle | None, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._waiting)

    @property
    def full(self) -> bool:
        return len(self._waiting) >= self.capacity

    def push(self, prediction: Prediction, message: dict[str, Any]) -> None:
        loop = asyncio.get_running_loop()
        timer = None
        if self.timeout:
            timer = loop.call_later(self.timeout, self._on_timeout, prediction)
        self._waiting[prediction.id] = (prediction, message, timer, loop.time())

    def restore(self, entries: list[tuple[Prediction, dict[str, Any]]]) -> None:
        """Put predictions taken back from a worker at the front, in their order: they
        waited their turn already (no queue timer; the capacity may be passed)."""
        now = asyncio.get_running_loop().time()
        for prediction, message in reversed(entries):
            self._waiting[prediction.id] = (prediction, message, None, now)
            self._waiting.move_to_end(prediction.id, last=False)

    def head(self, limit: int) -> tuple[str, int, float]:
        """The oldest waiting entry's kind ("prediction" or "training"), how many of the
        oldest entries (at most `limit`) in a row are of that kind, and when the oldest
        came (loop time). The backlog is not empty."""
        count, kind, since = 0, "", 0.0
        for prediction, _, _, came in self._waiting.values():
            if not count:
                kind, since = prediction.kind, came
            elif prediction.kind != kind or count >= limit:
                break
            count += 1
        return kind, count, since

    def pop(self) -> tuple[Prediction, dict[str, Any]] | None:
        """The oldest waiting prediction and its message, or None."""
        if not self._waiting:
            return None
        _, (prediction, message, timer, _) = self._waiting.popitem(last=False)
        if timer is not None:
            timer.cancel()
        return prediction, message

    def remove(self, prediction_id: str) -> Prediction | None:
        entry = self._waiting.pop(prediction_id, None)
        if entry is None:
            return None
        if entry[2] is not None:
            entry[2].cancel()
        return entry[0]

    def drain(self) -> list[Prediction]:
        """Take everything out (the server can no longer serve them)."""
        taken = []
        while (entry := self.pop()) is not None:
            taken.append(entry[0])
        return taken

    def retry_after(self, slots: int, mean_run: float) -> int:
        """Seconds a refused client should wait: the queue's expected drain time, >= 1."""
        return max(1, min(60, round(len(self._waiting) * mean_run / max(1, slots))))
