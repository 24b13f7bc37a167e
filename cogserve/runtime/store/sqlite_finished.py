"""The SQLite store's finished predictions: a row per batch written, evicted by rows,
their ids looked up in memory.

Every request a server answers with the default store ends here (a finished sync
prediction), so this is the store's per-request path (issue 27: it may cost scenario 1
at most 3%; bench/FINDINGS.md has the figures). It runs on the store's writer thread,
and on a CPU-bound machine every instruction it runs is taken from the event loop, as
is the GIL it holds while its Python runs. So:

- A batch of finished sync predictions (`interface.FinishedBatch`, up to 256) is one row of the
  `finished` table: its ids (a JSON array), kinds and statuses (newline-joined, or one
  value when all are the same), creation times and the ends of its bodies (packed
  doubles and 64-bit integers), and the bodies one after another in one blob: one
  INSERT of seven values, each made by a C call over the batch, no Python per
  prediction. A row per prediction (a multi-row INSERT per 64, five values bound each,
  and at the count bound a DELETE of one evicted row per new one) cost the writer
  17,400-18,100 instructions and 2.6-3.0 us of CPU per prediction; a row per batch
  costs 5,700 and 1.1-1.7 us, most of it now the commit's WAL writes (27 frames of 4
  KiB for 256 predictions, two `pwrite` calls each; batches of 256 at the 1,000 bound:
  callgrind, `python -m bench.store_cost --in-process`, and 400 batches in a row).
  Freed pages are not zeroed (`sqlite_store._connect`): that wrote 53 frames a commit.
- Rows are numbered (`n`, AUTOINCREMENT: never reused) in the order written. The ids
  are looked up in a dict (id -> (n, position), in that order), read from the file at
  open and kept by the writer, the file's only one (`flock`). Eviction takes the
  oldest ids of the dict: whole rows go with one ranged DELETE, and the row the last
  one evicted sits in is cut: `finished_cut` holds (n, first position kept); at most
  one row is partly evicted (the oldest), so count, bytes and age bounds hold per
  prediction, as they did with a row each.
- A prediction written again (a newer row holds its id) needs nothing more: at open the
  rows are read in order and the newest position of an id wins. One forgotten without
  a newer one (written again unfinished, or dropped: seldom) leaves its position in
  `finished_gone`: at open it forgets the id there (its older positions with it).
- GET reads the row's small columns and the body's slice of the blob (blob I/O, not the
  whole blob: 17 us); a listing page reads every row's small columns and filters and
  sorts in Python (as many as the count bound; at 1,000: 0.2-0.6 ms a page of 100).
- A body over `BIG_BODY` is a row of its own, written in place (a zeroblob, then blob
  I/O).
- The byte bound reads an upper bound kept here (what was written; what went is not
  taken off), made exact by one scan when it passes the bound.
- Evicted ids are looked up in a dict too, written to the `evicted` table when the store
  closes and read back when it opens: a server killed forgets which ids its run
  evicted (a GET of one says it is unknown rather than evicted), where writing each
  id as it went cost a record 3,200 instructions.

The dicts are changed by the writer thread inside its transaction and read by any
thread (a dict lookup is atomic under the GIL); a reader goes to the file with the
number and checks the id at its position, so a number that moved finds nothing rather
than another prediction. A transaction that fails marks them `stale`: read again
before the next write.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import operator
import sqlite3
import struct
import time
from collections.abc import Iterable, Sequence

import orjson

from cogserve.runtime.store.interface import Bounds, Row

EVICTED_IDS = 10_000  # ids of evicted records remembered, so a GET can say so
# A body this big is written in place (a zeroblob, then blob I/O): bound as a parameter,
# SQLite would copy it and build the row in memory, twice its size more in the server
# for a moment (a 40 MiB input echoed in the final JSON: tests/test_big_body.py)
BIG_BODY = 1 << 20

TABLES = """
CREATE TABLE IF NOT EXISTS finished (
    n INTEGER PRIMARY KEY AUTOINCREMENT,  -- a batch, in the order written
    finished REAL NOT NULL,  -- when its predictions finished (written), for the age bound
    ids TEXT NOT NULL,  -- a JSON array
    kinds TEXT NOT NULL,  -- newline-joined, or one for all
    statuses TEXT NOT NULL,  -- newline-joined, or one for all
    created BLOB NOT NULL,  -- little-endian doubles
    ends BLOB NOT NULL,  -- little-endian int64s: where each body ends in `bodies`
    bodies BLOB NOT NULL  -- last: a zeroblob stays unexpanded only as a row's last column
);
-- the oldest row's positions below `first` are evicted (one row at most is cut)
CREATE TABLE IF NOT EXISTS finished_cut (
    one INTEGER PRIMARY KEY CHECK (one = 1), n INTEGER NOT NULL, first INTEGER NOT NULL);
-- positions forgotten with no newer row holding their id
CREATE TABLE IF NOT EXISTS finished_gone (
    n INTEGER NOT NULL, pos INTEGER NOT NULL, PRIMARY KEY (n, pos)) WITHOUT ROWID;
"""

_INSERT = ("INSERT INTO finished (finished, ids, kinds, statuses, created, ends, bodies) "
           "VALUES (?, ?, ?, ?, ?, ?, {})")
_INSERT_SMALL, _INSERT_BIG = _INSERT.format("?"), _INSERT.format("zeroblob(?)")
_BODY = operator.itemgetter(4)
Location = tuple[int, int]  # (n, position)


def _ends(blob: bytes) -> tuple[int, ...]:
    return struct.unpack(f"<{len(blob) // 8}q", blob)


def _each(column: str, count: int) -> list[str]:
    return column.split("\n") if "\n" in column else [column] * count


def _column(values: Sequence[str]) -> str:
    """Newline-joined; one value alone when they are all the same (most batches)."""
    first = values[0]
    return first if values.count(first) == len(values) else "\n".join(values)


def _at(column: str, pos: int) -> str:
    if "\n" not in column:
        return column
    return column.split("\n")[pos]


class FinishedRows:
    """The `finished` table as its writer keeps it (see the module's docstring)."""

    def __init__(self) -> None:
        self.ids: dict[str, Location] = {}  # id -> (n, position), in that order
        self.evicted: dict[str, None] = {}  # at least the last EVICTED_IDS, oldest first
        self.gone: set[Location] = set()  # `finished_gone`'s positions
        self.bytes = 0  # at least the bytes of the bodies kept
        self.stale = True  # `ids` may not match the file: `load` before writing

    def load(self, db: sqlite3.Connection) -> None:
        """`ids`, `gone` and `bytes` from the file (`evicted` stays: it only advises)."""
        cut = db.execute("SELECT n, first FROM finished_cut").fetchone() or (0, 0)
        gone = {(n, pos) for n, pos in db.execute("SELECT n, pos FROM finished_gone")}
        ids: dict[str, Location] = {}
        for n, row_ids in db.execute("SELECT n, ids FROM finished ORDER BY n"):
            for pos, prediction_id in enumerate(orjson.loads(row_ids)):
                if (n, pos) < cut:
                    continue
                ids.pop(prediction_id, None)  # the newest wins; a forgotten one (and
                if (n, pos) not in gone:  # the older ones of its id) stays gone
                    ids[prediction_id] = (n, pos)
        self.ids, self.gone = ids, gone
        self.bytes = int(db.execute("SELECT total(length(bodies)) FROM finished").fetchone()[0])
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

    def convert(self, db: sqlite3.Connection, old: Iterable[tuple[float, Row]]) -> None:
        """Layout 2's rows (a row per prediction: when it finished, and the row), in the
        order written: a row per run finished at one time (a batch then)."""
        for finished, group in itertools.groupby(old, key=operator.itemgetter(0)):
            self.append(db, [row for _, row in group], finished)

    # ------------------------------------------------------------ the writer's

    def append(self, db: sqlite3.Connection, rows: list[Row], finished: float) -> None:
        """Rows of finished predictions, in order, finished at `finished`; an id written
        before loses its older position."""
        if not rows:
            return
        new, kinds, statuses, created, bodies = zip(*rows, strict=True)
        joined = b"".join(bodies)
        self.bytes += len(joined)
        if len(joined) <= BIG_BODY or max(map(len, bodies)) <= BIG_BODY:
            self._insert(db, finished, new, kinds, statuses, created, bodies, joined)
            return
        start = 0  # rare: a big body is a row of its own, written in place
        while start < len(rows):
            end = start + 1
            if len(bodies[start]) <= BIG_BODY:
                while end < len(rows) and len(bodies[end]) <= BIG_BODY:
                    end += 1
            part = slice(start, end)
            self._insert(db, finished, new[part], kinds[part], statuses[part], created[part],
                         bodies[part], None)
            start = end

    def _insert(self, db: sqlite3.Connection, finished: float, new: Sequence[str],
                kinds: Sequence[str], statuses: Sequence[str], created: Sequence[float],
                bodies: Sequence[bytes], joined: bytes | None) -> None:
        """One row (`joined`: the bodies joined; None: one big body), its ids in `ids`."""
        count = len(new)
        values = (finished, orjson.dumps(new).decode(), _column(kinds), _column(statuses),
                  struct.pack(f"<{count}d", *created),
                  struct.pack(f"<{count}q", *itertools.accumulate(map(len, bodies))))
        if joined is None:
            n = db.execute(_INSERT_BIG, (*values, len(bodies[0]))).lastrowid
            assert n is not None
            write_blob(db, "finished", "bodies", n, bodies[0])
        else:
            n = db.execute(_INSERT_SMALL, (*values, joined)).lastrowid
            assert n is not None
        ids = self.ids
        before = len(ids)
        ids.update(zip(new, zip(itertools.repeat(n), range(count)), strict=True))
        if len(ids) != before + count:  # rare: an id held already, or twice in the batch:
            for pos, prediction_id in enumerate(new):  # its newest position, in order
                ids.pop(prediction_id, None)
                ids[prediction_id] = (n, pos)

    def remove(self, db: sqlite3.Connection, prediction_id: str) -> None:
        """Its position (if any) is forgotten (and stays so in the file)."""
        where = self.ids.pop(prediction_id, None)
        if where is not None:
            db.execute("INSERT OR IGNORE INTO finished_gone VALUES (?, ?)", where)
            self.gone.add(where)

    def drop(self, db: sqlite3.Connection, prediction_id: str) -> None:
        """Forgotten at once, and remembered as evicted."""
        self.remove(db, prediction_id)
        self._forget([prediction_id])

    def evict(self, db: sqlite3.Connection, bounds: Bounds) -> None:
        """The oldest written go, until within count, age and bytes."""
        ids = self.ids
        count = max(0, len(ids) - bounds.count)  # the first `count` ids go
        if bounds.age:
            young = db.execute("SELECT n FROM finished WHERE finished >= ? ORDER BY n "
                               "LIMIT 1", (time.time() - bounds.age,)).fetchone()
            count = max(count, len(ids) if young is None else bisect.bisect_left(
                list(ids.values()), (young[0], -1)))
        if self.bytes > bounds.bytes:  # maybe: made exact, then the oldest go
            kept = list(itertools.islice(ids.values(), count, None))
            ends = {n: _ends(blob) for n, blob in db.execute(
                "SELECT n, ends FROM finished WHERE n >= ?", (kept[0][0] if kept else 0,))}
            lengths = [ends[n][pos] - (ends[n][pos - 1] if pos else 0) for n, pos in kept]
            size = sum(lengths)
            for length in lengths:
                if size <= bounds.bytes:
                    break
                count, size = count + 1, size - length
            self.bytes = size
        if not count:
            return
        victims = list(itertools.islice(ids, count))
        n, pos = ids[victims[-1]]
        collections.deque(map(ids.pop, victims), 0)
        db.execute("DELETE FROM finished WHERE n < ?", (n,))
        db.execute("INSERT OR REPLACE INTO finished_cut VALUES (1, ?, ?)", (n, pos + 1))
        if self.gone:
            db.execute("DELETE FROM finished_gone WHERE n < ? OR (n = ? AND pos <= ?)",
                       (n, n, pos))
            self.gone = {where for where in self.gone if where > (n, pos)}
        self._forget(victims)

    def _forget(self, ids: list[str]) -> None:
        """Remember these ids as evicted (cut in bulk, when twice as many as kept)."""
        collections.deque(map(self.evicted.setdefault, ids), 0)  # (no dict made)
        if len(self.evicted) > 2 * EVICTED_IDS:
            self.evicted = dict.fromkeys(list(self.evicted)[-EVICTED_IDS:])

    # ------------------------------------------------------------ any thread's

    def get(self, db: sqlite3.Connection, prediction_id: str
            ) -> tuple[str, str, float, bytes, float] | None:
        """(kind, status, created, body, finished), or None; `db` in a read transaction
        (the row and its body read alike)."""
        where = self.ids.get(prediction_id)
        if where is None:
            return None
        n, pos = where
        row = db.execute("SELECT finished, ids, kinds, statuses, created, ends FROM finished "
                         "WHERE n = ?", (n,)).fetchone()
        if row is None:
            return None
        finished, row_ids, kinds, statuses, created, ends = row
        listed = orjson.loads(row_ids)
        if pos >= len(listed) or listed[pos] != prediction_id:
            return None
        start, end = (_ends(ends[8 * pos - 8:8 * pos + 8]) if pos else (0, *_ends(ends[:8])))
        return (_at(kinds, pos), _at(statuses, pos),
                struct.unpack_from("<d", created, 8 * pos)[0],
                read_blob(db, "finished", "bodies", n, start, end - start), finished)

    def page(self, db: sqlite3.Connection, kind: str, status: str | None,
             after: tuple[float, str] | None, limit: int) -> list[tuple[float, str, bytes]]:
        """The newest `limit` of `kind` (and `status`) older than `after` (created, id):
        (created, id, body), newest first; `db` in a read transaction."""
        ids = self.ids
        found: list[tuple[float, str, int, int, int]] = []
        for n, row_ids, kinds, statuses, created, ends in db.execute(
                "SELECT n, ids, kinds, statuses, created, ends FROM finished"):
            listed = orjson.loads(row_ids)
            stops = (0, *_ends(ends))
            for pos, (prediction_id, its_kind, its_status, its_created) in enumerate(zip(
                    listed, _each(kinds, len(listed)), _each(statuses, len(listed)),
                    struct.unpack(f"<{len(listed)}d", created), strict=True)):
                if (its_kind != kind or (status is not None and its_status != status)
                        or (after is not None and (its_created, prediction_id) >= after)
                        or ids.get(prediction_id) != (n, pos)):
                    continue
                found.append((its_created, prediction_id, n, stops[pos], stops[pos + 1]))
        found.sort(reverse=True)
        return [(its_created, prediction_id,
                 read_blob(db, "finished", "bodies", n, start, end - start))
                for its_created, prediction_id, n, start, end in found[:limit]]

    def was_evicted(self, prediction_id: str) -> bool:
        """Evicted, and not finished again since (unfinished again: the caller asks)."""
        return prediction_id in self.evicted and prediction_id not in self.ids


def write_blob(db: sqlite3.Connection, table: str, column: str, rowid: int,
               body: bytes) -> None:
    """`body` into the zeroblob of its size the row `rowid` of `table` holds."""
    with db.blobopen(table, column, rowid) as blob:
        view = memoryview(body)
        for start in range(0, len(body), BIG_BODY):
            blob.write(view[start:start + BIG_BODY])


def read_blob(db: sqlite3.Connection, table: str, column: str, rowid: int, start: int,
              length: int) -> bytes:
    with db.blobopen(table, column, rowid, readonly=True) as blob:
        blob.seek(start)
        return blob.read(length)
