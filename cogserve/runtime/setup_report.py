"""Setup as `/health-check` reports it: when it started and ended, how, and its logs.

One report per (re)start of the server as a whole; a worker that replaces another while
others serve writes to the server log instead. Lines are kept as a list and joined when
read, so a chatty setup costs O(n), not O(n^2).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from cogserve.runtime.prediction import iso, now
from cogserve.wire.states import Status


@dataclass(frozen=True)
class SetupView:
    """The report at one moment (part of `HealthSnapshot`)."""

    started_at: str | None
    completed_at: str | None
    status: Status
    logs: str


@dataclass
class SetupReport:
    started_at: str | None = None
    completed_at: str | None = None
    status: Status = Status.STARTING
    lines: list[str] = field(default_factory=list)
    is_open: bool = False  # describes a (re)start under way
    _began: float = 0.0  # monotonic, for the setup duration

    def open(self) -> None:
        """A new report: the server as a whole is (re)starting."""
        self._began = time.monotonic()
        self.started_at = iso(now())
        self.completed_at = None
        self.status = Status.STARTING
        self.lines = []
        self.is_open = True

    def append(self, line: str) -> None:
        self.lines.append(line)

    def finish(self, status: Status) -> float:
        """Close the report; returns the seconds setup took."""
        self.is_open = False
        self.completed_at = iso(now())
        self.status = status
        return time.monotonic() - self._began

    @property
    def logs(self) -> str:
        return "".join(self.lines)

    def view(self) -> SetupView:
        return SetupView(self.started_at, self.completed_at, self.status, self.logs)
