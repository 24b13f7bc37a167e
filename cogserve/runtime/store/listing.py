"""`GET /predictions?status=...`: predictions newest first, a page at a time.

With a durable store the store answers (what every server sharing it accepted or
finished: async ones from acceptance, sync ones once finished). With `--store memory`
this server's own answer: what it runs and queues, and the finished ones it keeps.
A cursor is the (created, id) of the last one on the previous page.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import TYPE_CHECKING

import orjson

from cogserve.runtime.prediction import Prediction
from cogserve.runtime.store.cache import RecentCache
from cogserve.runtime.store.interface import Page, cursor_of, parse_cursor

if TYPE_CHECKING:
    from cogserve.runtime.store.durable import Durable


async def page(durable: Durable | None, running: Iterable[Prediction],
               recent: RecentCache, kind: str, status: str | None, limit: int,
               cursor: str | None) -> Page:
    """Raises ValueError for a cursor not made here, StoreError if the store fails."""
    if durable is not None:
        if cursor is not None:
            parse_cursor(cursor)
        return await durable.page(kind, status, limit, cursor)
    return _memory_page(running, recent, kind, status, limit, cursor)


def _memory_page(running: Iterable[Prediction], recent: RecentCache, kind: str,
                 status: str | None, limit: int, cursor: str | None) -> Page:
    rows: list[tuple[float, str, bytes]] = []
    for prediction in running:
        if prediction.kind == kind and status in (None, prediction.status):
            rows.append((prediction.created_at.timestamp(), prediction.id,
                         prediction.encoded()))
    for prediction_id, entry in recent.entries.items():
        if entry.kind != kind:
            continue
        doc = orjson.loads(entry.body)
        if status in (None, doc.get("status")):
            created = datetime.datetime.fromisoformat(doc["created_at"]).timestamp()
            rows.append((created, prediction_id, entry.body))
    rows.sort(reverse=True)
    if cursor is not None:
        top = parse_cursor(cursor)
        rows = [row for row in rows if (row[0], row[1]) < top]
    following = cursor_of(rows[limit - 1][0], rows[limit - 1][1]) if len(rows) > limit else None
    return Page([row[2] for row in rows[:limit]], following)
