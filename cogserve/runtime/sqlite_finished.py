"""The SQLite store's finished predictions: appended in bulk, evicted in ranges, their ids
looked up in memory.

Every request a server answers with the default store ends here (a finished sync
prediction), so this is the store's per-request path (issue 27: it may cost scenario 1
at most 3%; bench/FINDINGS.md has the figures). It runs on the store's writer thread,
and what it costs the event loop is mostly the GIL: sqlite3 releases it while SQLite
works and takes it back after each call, from the loop if the loop holds it then. So:

- A batch of finished sync predictions (`records.Finished`) is a multi-row INSERT per
  64 of them (the bound values: the GIL held ~75 us at most), so a full batch of 256
  costs the loop seven GIL round trips (BEGIN, four INSERTs, the eviction's DELETE,
  COMMIT), not one per prediction. (Handing SQLite the batch as one JSON text instead
  took the GIL once, but cost 14,000 more instructions a record to take apart.)
- Rows are numbered (`n`, the rowid) in the order written; eviction takes the lowest
  numbers: one ranged DELETE.
- The table has no index but its rowid. An index on the id (random entries, a b-tree
  page rewritten for each) cost ~4,300 instructions a record and a listing index 5,800
  to 11,600, against ~530,000 for a whole no-op prediction. So the ids are looked up in
  a dict (id -> n, in the order of n), read from the file at open and kept by the
  writer, the file's only one (`flock`). A listing page sorts the rows (as many as the
  count bound, 1,000 by default: a fraction of a millisecond).
- The byte bound reads an upper bound kept here (what was written; what went is not
  taken off), made exact by one scan when it passes the bound.
- Evicted ids are looked up in a dict too, written to the `evicted` table when the store
  closes and read back when it opens: a server killed forgets which ids its run
  evicted (a GET of one says it is unknown rather than evicted), where writing each
  id as it went cost a record 3,200 instructions (15% of it).

The dicts are changed by the writer thread inside its transaction and read by any
thread (a dict lookup is atomic under the GIL); a reader goes to the file with the
number and the id both, so a number that moved finds nothing rather than another row.
A transaction that fails marks them `stale`: read again before the next write.
"""

from __future__ import annotations

import itertools
import operator
import sqlite3
import time

import orjson

from cogserve.runtime.records import Bounds, Row

EVICTED_IDS = 10_000  # ids of evicted records remembered, so a GET can say so
# A body this big is written in place (a zeroblob, then blob I/O): bound as a parameter,
# SQLite would copy it and build the row in memory, twice its size more in the server
# for a moment (a 40 MiB input echoed in the final JSON: tests/test_big_body.py)
BIG_BODY = 1 << 20

_INSERT = "INSERT INTO finished (finished, id, kind, status, created, body) VALUES "
_ROW = "(?1, ?, ?, ?, ?, {body})"  # ?1: when they finished (a batch's rows: when written)
# rows per INSERT: a batch is cut into these (cached statements, at most 7 per batch)
_CHUNKS = (64, 32, 16, 8, 4, 2, 1)
_INSERTS = {n: _INSERT + ", ".join([_ROW.format(body="?")] * n) for n in _CHUNKS}
_INSERT_BIG = _INSERT + _ROW.format(body="zeroblob(?)")
_ID, _BODY = operator.itemgetter(0), operator.itemgetter(4)

# sqlite3 binds int, float, str and bytearray as they are, but asks its adapters about
# anything else: for a bytes body, a lookup of `__adapt__` on its protocol that raises
# and formats an AttributeError, ~3,000 instructions per body. An adapter of bytes is
# found at once, and `bytes.__bytes__` returns the body itself (`bytes` would parse its
# arguments: 7 times slower). It is the process's adapter, and changes nothing.
sqlite3.register_adapter(bytes, bytes.__bytes__)


class FinishedRows:
    """The `finished` table as its writer keeps it (see the module's docstring)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}  # id -> n, in the order of n
        self.evicted: dict[str, None] = {}  # at least the last EVICTED_IDS, oldest first
        self.bytes = 0  # at least the bytes of the bodies kept
        self.stale = True  # `ids` may not match the file: `load` before writing

    def load(self, db: sqlite3.Connection) -> None:
        """`ids` and `bytes` from the file (`evicted` stays: it only advises)."""
        ids: dict[str, int] = {}
        for prediction_id, n in db.execute("SELECT id, n FROM finished ORDER BY n"):
            ids.pop(prediction_id, None)  # (one row per id: the newest would win)
            ids[prediction_id] = n
        self.ids = ids
        self.bytes = int(db.execute("SELECT total(length(body)) FROM finished").fetchone()[0])
        self.stale = False

    def load_evicted(self, db: sqlite3.Connection) -> None:
        self.evicted = dict.fromkeys(row[0] for row in db.execute(
            "SELECT id FROM (SELECT n, id FROM evicted ORDER BY n DESC LIMIT ?) ORDER BY n",
            (EVICTED_IDS,)))

    def save_evicted(self, db: sqlite3.Connection) -> None:
        """The evicted ids remembered, into the file (at close), in one transaction."""
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM evicted")
            db.execute("INSERT INTO evicted (id) SELECT value FROM json_each(?) ORDER BY key",
                       (orjson.dumps(list(self.evicted)[-EVICTED_IDS:]),))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------ the writer's

    def append(self, db: sqlite3.Connection, rows: list[Row], finished: float) -> None:
        """Rows of finished predictions, in order, finished at `finished`; an id written
        before loses its older row."""
        if not rows:
            return
        new = list(map(_ID, rows))
        sizes = list(map(len, map(_BODY, rows)))
        self.bytes += sum(sizes)
        if (self.ids.keys().isdisjoint(new) and len(set(new)) == len(new)
                and max(sizes) <= BIG_BODY):
            self._insert(db, rows, finished)
            return
        for row in rows:  # rare: an id written again, or a big body: one at a time
            self.remove(db, row[0])
            if len(row[4]) <= BIG_BODY:
                self._insert(db, [row], finished)
                continue
            n = db.execute(_INSERT_BIG, (finished, *row[:4], len(row[4]))).lastrowid
            assert n is not None
            write_blob(db, "finished", n, row[4])
            self.ids[row[0]] = n

    def _insert(self, db: sqlite3.Connection, rows: list[Row], finished: float) -> None:
        ids = self.ids
        start, left = 0, len(rows)
        for n in _CHUNKS:
            while left >= n:
                chunk = rows[start:start + n]
                last = db.execute(_INSERTS[n], (finished, *itertools.chain.from_iterable(
                    chunk))).lastrowid
                assert last is not None
                # numbered one after another, after every row there is: in the dict's order
                ids.update(zip(map(_ID, chunk), range(last - n + 1, last + 1), strict=True))
                start += n
                left -= n

    def remove(self, db: sqlite3.Connection, prediction_id: str) -> None:
        """Its row (if any) goes."""
        n = self.ids.pop(prediction_id, None)
        if n is not None:
            db.execute("DELETE FROM finished WHERE n = ?", (n,))

    def drop(self, db: sqlite3.Connection, prediction_id: str) -> None:
        """Forgotten at once, and remembered as evicted."""
        self.remove(db, prediction_id)
        self._forget([prediction_id])

    def evict(self, db: sqlite3.Connection, bounds: Bounds) -> None:
        """The oldest written go, until within count, age and bytes."""
        ids = self.ids
        count = max(0, len(ids) - bounds.count)  # the first `count` rows go
        if bounds.age:
            young = db.execute("SELECT n FROM finished WHERE finished >= ? ORDER BY n "
                               "LIMIT 1", (time.time() - bounds.age,)).fetchone()
            count = max(count, len(ids) if young is None else db.execute(
                "SELECT count(*) FROM finished WHERE n < ?", (young[0],)).fetchone()[0])
        last = ids[next(itertools.islice(ids, count - 1, None))] if count else 0
        if self.bytes > bounds.bytes:  # maybe: made exact, then the oldest go
            size = int(db.execute("SELECT total(length(body)) FROM finished WHERE n > ?",
                                  (last,)).fetchone()[0])
            for n, length in db.execute("SELECT n, length(body) FROM finished WHERE n > ? "
                                        "ORDER BY n", (last,)).fetchall():
                if size <= bounds.bytes:
                    break
                count, last, size = count + 1, n, size - length
            self.bytes = size
        if count:
            victims = list(itertools.islice(ids, count))
            for prediction_id in victims:
                del ids[prediction_id]
            db.execute("DELETE FROM finished WHERE n <= ?", (last,))
            self._forget(victims)

    def _forget(self, ids: list[str]) -> None:
        """Remember these ids as evicted (cut in bulk, when twice as many as kept)."""
        self.evicted.update(dict.fromkeys(ids))
        if len(self.evicted) > 2 * EVICTED_IDS:
            self.evicted = dict.fromkeys(list(self.evicted)[-EVICTED_IDS:])

    # ------------------------------------------------------------ any thread's

    def number(self, prediction_id: str) -> int | None:
        return self.ids.get(prediction_id)

    def was_evicted(self, prediction_id: str) -> bool:
        """Evicted, and not finished again since (unfinished again: the caller asks)."""
        return prediction_id in self.evicted and prediction_id not in self.ids


def write_blob(db: sqlite3.Connection, table: str, rowid: int, body: bytes) -> None:
    """`body` into the zeroblob of its size the row `rowid` of `table` holds."""
    with db.blobopen(table, "body", rowid) as blob:
        view = memoryview(body)
        for start in range(0, len(body), BIG_BODY):
            blob.write(view[start:start + BIG_BODY])
