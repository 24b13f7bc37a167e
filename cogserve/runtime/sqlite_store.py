"""The default prediction store: one SQLite file (stdlib `sqlite3`, WAL), one server.

A file belongs to one server at a time: an exclusive `flock` on `<file>.lock`, held
while the server runs, so a second server started on the same file stops at start
(the kernel drops the lock when its holder dies, even by SIGKILL). Being the only
writer, the server takes over everything unfinished it finds when it opens the file.

WAL with `synchronous=NORMAL`: a commit is in the operating system's hands when it
returns, so a killed process loses nothing it committed (a power cut may lose the last
commits; `fsync` per commit would cost every request a disk flush). Reads use a
connection per thread and never wait for the writer.

`PRAGMA user_version` is the layout's version (`records.SCHEMA_VERSION`): a newer one
is refused at start, as is a file that is not a database or fails `quick_check`.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any

from cogserve.runtime.records import (
    SCHEMA_VERSION,
    Bounds,
    Claimed,
    Dropped,
    Hook,
    HookDone,
    Page,
    PredictionStore,
    Record,
    Stage,
    StoreError,
    Write,
    cursor_of,
    parse_cursor,
)

EVICTED_IDS = 10_000  # ids of evicted records remembered, so a GET can say so
WAY_OUT = "(--store PATH chooses another file; --store memory keeps nothing on disk)"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS records (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    stage TEXT NOT NULL,
    created REAL NOT NULL,
    finished REAL,
    request BLOB,
    owner TEXT NOT NULL,
    body BLOB NOT NULL  -- last: a zeroblob stays unexpanded only as a row's last column
);
CREATE INDEX IF NOT EXISTS records_listing ON records (kind, created DESC, id DESC);
CREATE INDEX IF NOT EXISTS records_by_status ON records (kind, status, created DESC, id DESC);
CREATE INDEX IF NOT EXISTS records_finished ON records (finished) WHERE finished IS NOT NULL;
CREATE INDEX IF NOT EXISTS records_unfinished ON records (stage) WHERE finished IS NULL;
CREATE TABLE IF NOT EXISTS outbox (
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    delivery TEXT NOT NULL,
    url TEXT NOT NULL,
    body BLOB NOT NULL,
    headers BLOB NOT NULL,
    PRIMARY KEY (id, seq)
);
CREATE TABLE IF NOT EXISTS evicted (n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE);
CREATE TABLE IF NOT EXISTS totals (one INTEGER PRIMARY KEY CHECK (one = 1),
                                   count INTEGER NOT NULL, bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO totals VALUES (1, 0, 0);
-- the finished records' count and bytes, kept by SQLite itself: a write is one statement
CREATE TRIGGER IF NOT EXISTS totals_insert AFTER INSERT ON records
WHEN new.finished IS NOT NULL BEGIN
    UPDATE totals SET count = count + 1, bytes = bytes + length(new.body);
END;
CREATE TRIGGER IF NOT EXISTS totals_delete AFTER DELETE ON records
WHEN old.finished IS NOT NULL BEGIN
    UPDATE totals SET count = count - 1, bytes = bytes - length(old.body);
END;
CREATE TRIGGER IF NOT EXISTS totals_update AFTER UPDATE ON records
WHEN new.finished IS NOT NULL OR old.finished IS NOT NULL BEGIN
    UPDATE totals SET
        count = count + (new.finished IS NOT NULL) - (old.finished IS NOT NULL),
        bytes = bytes + iif(new.finished IS NULL, 0, length(new.body))
                      - iif(old.finished IS NULL, 0, length(old.body));
END;
PRAGMA user_version = {SCHEMA_VERSION};
"""


# a record as written: the request is kept until it finished (recovery needs it)
_UPSERT = ("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, {body}) ON CONFLICT (id) DO "
           "UPDATE SET kind = excluded.kind, status = excluded.status, stage = excluded.stage,"
           " finished = excluded.finished, body = excluded.body, owner = excluded.owner,"
           " request = iif(excluded.finished IS NULL, coalesce(excluded.request, request),"
           " NULL)")
# A body this big is written in place (a zeroblob, then incremental blob I/O): bound as a
# parameter, SQLite would copy it and build the row in memory, twice its size more in the
# server for a moment (a 40 MiB input echoed in the final JSON: tests/test_big_body.py)
BIG_BODY = 1 << 20
_UPSERT_SMALL = _UPSERT.format(body="?")


class SQLiteStore(PredictionStore):
    shared = False

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        self.description = self.path
        # two connections, both opened here so the server's descriptors do not grow
        # later: the writer thread's, and one for reads from any thread (under a lock;
        # WAL: reads never wait for the writer)
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._reading = threading.Lock()
        folder = os.path.dirname(self.path)
        try:
            os.makedirs(folder, exist_ok=True)
            self._lock_fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot open the prediction store {self.path}: "
                             f"{exc.strerror or exc} {WAY_OUT}") from None
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_pid(self._lock_fd)
            os.close(self._lock_fd)
            raise StoreError(f"the prediction store {self.path} is in use by another cogserve"
                             f"{f' (pid {holder})' if holder else ''}: two servers cannot "
                             f"share a file {WAY_OUT}") from None
        os.ftruncate(self._lock_fd, 0)
        os.pwrite(self._lock_fd, str(os.getpid()).encode(), 0)
        try:
            self._open()
        except BaseException:
            self.close("")
            raise

    def _open(self) -> None:
        if os.path.exists(self.path) and not os.access(self.path, os.R_OK | os.W_OK):
            raise StoreError(f"the prediction store {self.path} cannot be read and written "
                             f"by this user {WAY_OUT}")
        try:
            db = self._writer = _connect(self.path)
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(f"the prediction store {self.path} was written by a newer "
                                 f"cogserve (layout {version}; this one reads up to "
                                 f"{SCHEMA_VERSION}) {WAY_OUT}")
            check = db.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                check = "; ".join(line.strip() for line in str(check).splitlines())
                raise StoreError(f"the prediction store {self.path} is corrupt ({check}) "
                                 f"{WAY_OUT}")
            db.execute("PRAGMA journal_mode=WAL")
            with db:
                db.executescript(_SCHEMA)
            self._reader = _connect(self.path)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"the prediction store {self.path} cannot be used: {exc} "
                             f"{WAY_OUT}") from None

    # ------------------------------------------------------------ writing

    def write(self, batch: Sequence[Write], bounds: Bounds, owner: str) -> None:
        now = time.time()
        records = []
        outbox: list[Hook | HookDone] = []
        dropped = []
        for item in batch:
            if isinstance(item, Dropped):
                dropped.append((item.id,))
            elif isinstance(item, Record):
                finished = item.stage is Stage.FINISHED
                records.append((item.id, item.kind, item.status, item.stage, item.created,
                                (now if item.finished is None else item.finished)
                                if finished else None,
                                None if finished else item.request, owner, item.body))
            else:
                outbox.append(item)
        db = self._writer
        assert db is not None, "closed"
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                # tables apart need no order between them
                small: list[tuple[Any, ...]] = []
                for row in records:  # in order: a later write of an id wins
                    if len(row[8]) > BIG_BODY:
                        db.executemany(_UPSERT_SMALL, small)
                        small = []
                        self._write_big(db, row)
                    else:
                        small.append(row)
                db.executemany(_UPSERT_SMALL, small)
                for hook in outbox:
                    if isinstance(hook, Hook):
                        db.execute("INSERT OR REPLACE INTO outbox VALUES (?, ?, ?, ?, ?, ?)",
                                   (hook.id, hook.seq, hook.delivery, hook.url, hook.body,
                                    hook.headers))
                    else:
                        db.execute("DELETE FROM outbox WHERE id = ? AND seq = ?",
                                   (hook.id, hook.seq))
                if dropped:  # after the records: a drop follows the record it ends
                    db.executemany("DELETE FROM records WHERE id = ?", dropped)
                    db.executemany("INSERT OR REPLACE INTO evicted (id) VALUES (?)", dropped)
                self._evict(db, bounds)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"writing the prediction store {self.path} failed: {exc}") from exc

    @staticmethod
    def _write_big(db: sqlite3.Connection, row: tuple[Any, ...]) -> None:
        body = row[8]
        db.execute(_UPSERT.format(body="zeroblob(?)"), (*row[:8], len(body)))
        rowid = db.execute("SELECT rowid FROM records WHERE id = ?", (row[0],)).fetchone()[0]
        with db.blobopen("records", "body", rowid) as blob:
            view = memoryview(body)
            for start in range(0, len(body), BIG_BODY):
                blob.write(view[start:start + BIG_BODY])

    @staticmethod
    def _evict(db: sqlite3.Connection, bounds: Bounds) -> None:
        """Oldest finished first, until within count, bytes and age."""
        count, size = db.execute("SELECT count, bytes FROM totals").fetchone()
        cutoff = time.time() - bounds.age if bounds.age else None
        if count <= bounds.count and size <= bounds.bytes and cutoff is None:
            return
        victims = []
        for prediction_id, finished, length in db.execute(
                "SELECT id, finished, length(body) FROM records WHERE finished IS NOT NULL "
                "ORDER BY finished"):
            if count <= bounds.count and size <= bounds.bytes and (
                    cutoff is None or finished >= cutoff):
                break
            victims.append((prediction_id,))
            count -= 1
            size -= length
        if not victims:
            return
        db.executemany("DELETE FROM records WHERE id = ?", victims)  # totals: its trigger
        db.executemany("INSERT OR REPLACE INTO evicted (id) VALUES (?)", victims)
        db.execute("DELETE FROM evicted WHERE n <= (SELECT max(n) FROM evicted) - ?",
                   (EVICTED_IDS,))

    # ------------------------------------------------------------ reading

    def get(self, prediction_id: str) -> Record | None:
        row = self._query("SELECT id, kind, status, stage, created, body, finished, request "
                          "FROM records WHERE id = ?", (prediction_id,))
        return _record(row[0]) if row else None

    def was_evicted(self, prediction_id: str) -> bool:
        """Evicted, and not written again since."""
        return bool(self._query("SELECT 1 FROM evicted WHERE id = ? AND NOT EXISTS (SELECT 1 "
                                "FROM records WHERE id = ?)", (prediction_id, prediction_id)))

    def page(self, kind: str, status: str | None, limit: int, cursor: str | None) -> Page:
        where = ["kind = ?"]
        args: list[object] = [kind]
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if cursor is not None:
            created, after = parse_cursor(cursor)
            where.append("(created < ? OR (created = ? AND id < ?))")
            args += [created, created, after]
        rows = self._query(f"SELECT body, created, id FROM records WHERE {' AND '.join(where)}"
                           " ORDER BY created DESC, id DESC LIMIT ?", (*args, limit + 1))
        following = cursor_of(rows[limit - 1][1], rows[limit - 1][2]) if len(rows) > limit \
            else None
        return Page([row[0] for row in rows[:limit]], following)

    def claim(self, owner: str) -> Claimed:
        """The only writer: everything unfinished (and every pending hook) is orphaned."""
        records = [_record(row) for row in self._query(
            "SELECT id, kind, status, stage, created, body, finished, request FROM records "
            "WHERE finished IS NULL AND owner != ? ORDER BY created", (owner,))]
        hooks = [Hook(*row) for row in self._query(
            "SELECT id, seq, delivery, url, body, headers FROM outbox ORDER BY id, seq", ())]
        return Claimed(records, hooks)

    def heartbeat(self, owner: str, lease: float) -> None:
        pass  # the file lock says it

    def close(self, owner: str) -> None:
        for db in (self._writer, self._reader):
            if db is not None:
                db.close()
        self._writer = self._reader = None
        self._unlock()

    def _unlock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # the lock goes with the descriptor
            self._lock_fd = -1

    def _query(self, sql: str, args: Sequence[object]) -> list[tuple[Any, ...]]:
        try:
            with self._reading:
                assert self._reader is not None, "closed"
                return self._reader.execute(sql, tuple(args)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"reading the prediction store {self.path} failed: {exc}") from exc


def _connect(path: str) -> sqlite3.Connection:
    # autocommit (transactions are explicit); used by one thread at a time, not always
    # the one that opened it
    db = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=5000")
    return db


def _record(row: tuple[Any, ...]) -> Record:
    prediction_id, kind, status, stage, created, body, finished, request = row
    assert isinstance(prediction_id, str) and isinstance(kind, str) and isinstance(status, str)
    assert isinstance(stage, str) and isinstance(created, float) and isinstance(body, bytes)
    return Record(prediction_id, kind, status, Stage(stage), created, body,
                  finished if isinstance(finished, float) else None,
                  request if isinstance(request, bytes) else None)


def _read_pid(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode().strip()
    except (OSError, UnicodeDecodeError):
        return ""
