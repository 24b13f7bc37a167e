"""The default prediction store: one SQLite file (stdlib `sqlite3`, WAL), one server.

A file belongs to one server at a time: an exclusive `flock` on `<file>.lock`, held
while the server runs, so a second server started on the same file stops at start
(the kernel drops the lock when its holder dies, even by SIGKILL). Being the only
writer, the server takes over everything unfinished it finds when it opens the file.

WAL with `synchronous=NORMAL`: a commit is in the operating system's hands when it
returns, so a killed process loses nothing it committed (a power cut may lose the last
commits; `fsync` per commit would cost every request a disk flush). Reads use a
connection of their own and never wait for the writer.

Tables: `unfinished` (async predictions queued or running, by id: few), `finished`
(every finished one: a row per batch written, with `finished_cut` and `finished_gone`:
`runtime/store/sqlite_finished.py`, the per-request path), `evicted` (ids a GET can say were
evicted), `outbox` (webhook deliveries not yet made). `PRAGMA user_version` is the
layout's version (`LAYOUT`): a newer one is refused at start, as is a file that is not a
database or fails `quick_check`; layout 1 (one `records` table with four indexes, totals kept by
triggers) and layout 2 (a `finished` row per prediction) are converted when opened.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from cogserve.runtime.errors import StoreError
from cogserve.runtime.store import interface
from cogserve.runtime.store.sqlite_finished import BIG_BODY, TABLES, FinishedRows, write_blob

log = logging.getLogger("cogserve")
_T = TypeVar("_T")

LAYOUT = 3  # bumped when the tables change; a newer file is refused, an older converted
WAY_OUT = "(--store PATH chooses another file; --store memory keeps nothing on disk)"

_TABLES = """
CREATE TABLE IF NOT EXISTS unfinished (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    stage TEXT NOT NULL,
    created REAL NOT NULL,
    request BLOB,
    owner TEXT NOT NULL,
    body BLOB NOT NULL  -- last: a zeroblob stays unexpanded only as a row's last column
);
CREATE TABLE IF NOT EXISTS outbox (
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    delivery TEXT NOT NULL,
    url TEXT NOT NULL,
    body BLOB NOT NULL,
    headers BLOB NOT NULL,
    PRIMARY KEY (id, seq)
);
-- written when the store closes, read when it opens; looked up in memory meanwhile
CREATE TABLE IF NOT EXISTS evicted (n INTEGER PRIMARY KEY, id TEXT NOT NULL);
""" + TABLES  # finished predictions: sqlite_finished.py

# layout 2's finished predictions, a row each (renamed `finished_2` while converted)
_FINISHED_2 = """
CREATE TABLE finished_2 (n INTEGER PRIMARY KEY, id TEXT NOT NULL, kind TEXT NOT NULL,
    status TEXT NOT NULL, created REAL NOT NULL, finished REAL NOT NULL, body BLOB NOT NULL);
"""
# layout 1 (cogserve before the finished table): its rows are copied over, the finished
# ones in the order they finished (into layout 2's table, converted next); its triggers
# and indexes go with its table
_FROM_LAYOUT_1_BEFORE = "ALTER TABLE evicted RENAME TO evicted_1;" + _FINISHED_2
_FROM_LAYOUT_1_AFTER = """
INSERT INTO unfinished (id, kind, status, stage, created, request, owner, body)
    SELECT id, kind, status, stage, created, request, owner, body FROM records
    WHERE finished IS NULL;
INSERT INTO finished_2 (id, kind, status, created, finished, body)
    SELECT id, kind, status, created, finished, body FROM records
    WHERE finished IS NOT NULL ORDER BY finished;
INSERT INTO evicted (id) SELECT id FROM evicted_1 ORDER BY n;
DROP TABLE records;
DROP TABLE totals;
DROP TABLE evicted_1;
"""
_FROM_LAYOUT_2_BEFORE = "ALTER TABLE finished RENAME TO finished_2;"

# an unfinished record as written: its request is kept from its first write
_UPSERT = ("INSERT INTO unfinished VALUES (?, ?, ?, ?, ?, ?, ?, {body}) ON CONFLICT (id) DO "
           "UPDATE SET kind = excluded.kind, status = excluded.status, stage = excluded.stage,"
           " body = excluded.body, owner = excluded.owner,"
           " request = coalesce(excluded.request, request)")
_UPSERT_SMALL, _UPSERT_BIG = _UPSERT.format(body="?"), _UPSERT.format(body="zeroblob(?)")
_UNFINISHED = "SELECT id, kind, status, stage, created, body, NULL, request FROM unfinished"


class SQLiteStore(interface.PredictionStore):
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
        self._finished = FinishedRows()
        self._unfinished: set[str] = set()  # the ids of `unfinished` (the writer's)
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
            if version > LAYOUT:
                raise StoreError(f"the prediction store {self.path} was written by a newer "
                                 f"cogserve (layout {version}; this one reads up to "
                                 f"{LAYOUT}) {WAY_OUT}")
            check = db.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                check = "; ".join(line.strip() for line in str(check).splitlines())
                raise StoreError(f"the prediction store {self.path} is corrupt ({check}) "
                                 f"{WAY_OUT}")
            db.execute("PRAGMA journal_mode=WAL")
            script = {1: _FROM_LAYOUT_1_BEFORE + _TABLES + _FROM_LAYOUT_1_AFTER,
                      2: _FROM_LAYOUT_2_BEFORE + _TABLES}.get(version, _TABLES)
            db.execute("BEGIN IMMEDIATE")
            try:  # all or nothing: a conversion cut short leaves the older layout
                _run_script(db, script)
                if version in (1, 2):  # layout 2's rows, a row per batch
                    self._finished.ids = {}
                    self._finished.convert(db, (
                        (finished, (prediction_id, kind, status, created, body))
                        for prediction_id, kind, status, created, finished, body in db.execute(
                            "SELECT id, kind, status, created, finished, body FROM finished_2"
                            " ORDER BY n").fetchall()))
                    db.execute("DROP TABLE finished_2")
                db.execute(f"PRAGMA user_version = {LAYOUT}")
                db.execute("COMMIT")
            finally:
                if db.in_transaction:
                    db.execute("ROLLBACK")
            self._finished.load(db)
            self._finished.load_evicted(db)
            self._unfinished = {row[0] for row in db.execute("SELECT id FROM unfinished")}
            self._reader = _connect(self.path)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"the prediction store {self.path} cannot be used: {exc} "
                             f"{WAY_OUT}") from None

    # ------------------------------------------------------------ writing

    def write(self, batch: Sequence[interface.Write], bounds: interface.Bounds, owner: str) -> None:
        db = self._writer
        assert db is not None, "closed"
        finished = self._finished
        now = time.time()
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                if finished.stale:
                    finished.load(db)
                    self._unfinished = {row[0] for row in db.execute(
                        "SELECT id FROM unfinished")}
                for item in batch:  # in order: a later write of an id wins
                    if isinstance(item, interface.FinishedBatch):
                        if self._unfinished:  # (seldom any)
                            for prediction_id in self._unfinished.intersection(
                                    row[0] for row in item.rows):
                                self._unfinish(db, prediction_id)
                        finished.append(db, item.rows, now)
                    elif isinstance(item, interface.Record):
                        self._write_record(db, item, owner, now)
                    elif isinstance(item, interface.Hook):
                        db.execute("INSERT OR REPLACE INTO outbox VALUES (?, ?, ?, ?, ?, ?)",
                                   (item.id, item.seq, item.delivery, item.url, item.body,
                                    item.headers))
                    elif isinstance(item, interface.HookDone):
                        db.execute("DELETE FROM outbox WHERE id = ? AND seq = ?",
                                   (item.id, item.seq))
                    else:  # Dropped: its record (if any) goes, its id is said evicted
                        self._unfinish(db, item.id)
                        finished.drop(db, item.id)
                finished.evict(db, bounds)
                db.execute("COMMIT")
            except BaseException:
                finished.stale = True  # it followed writes now undone: read it again
                if db.in_transaction:
                    db.execute("ROLLBACK")
                with contextlib.suppress(sqlite3.Error):  # else before the next write
                    finished.load(db)
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"writing the prediction store {self.path} failed: {exc}") from exc

    def _write_record(self, db: sqlite3.Connection, item: interface.Record, owner: str,
                      now: float) -> None:
        """One record (an async prediction's change of stage)."""
        if item.stage is interface.Stage.FINISHED:
            self._unfinish(db, item.id)
            self._finished.append(db, [(item.id, item.kind, item.status, item.created,
                                        item.body)],
                                  now if item.finished is None else item.finished)
            return
        self._finished.remove(db, item.id)  # written again: unfinished
        self._unfinished.add(item.id)
        row = (item.id, item.kind, item.status, item.stage, item.created, item.request,
               owner)
        if len(item.body) <= BIG_BODY:
            db.execute(_UPSERT_SMALL, (*row, item.body))
            return
        db.execute(_UPSERT_BIG, (*row, len(item.body)))
        rowid = db.execute("SELECT rowid FROM unfinished WHERE id = ?",
                           (item.id,)).fetchone()[0]
        write_blob(db, "unfinished", "body", rowid, item.body)

    def _unfinish(self, db: sqlite3.Connection, prediction_id: str) -> None:
        """Its unfinished record (if any) goes."""
        if prediction_id in self._unfinished:
            self._unfinished.discard(prediction_id)
            db.execute("DELETE FROM unfinished WHERE id = ?", (prediction_id,))

    # ------------------------------------------------------------ reading

    def get(self, prediction_id: str) -> interface.Record | None:
        if prediction_id in self._finished.ids:  # (a number the writer just moved finds
            found = self._read(self._finished.get, prediction_id)  # nothing)
            if found is not None:
                kind, status, created, body, finished = found
                return interface.Record(prediction_id, kind, status, interface.Stage.FINISHED,
                                        created, body, finished)
        rows = self._query(f"{_UNFINISHED} WHERE id = ?", (prediction_id,))
        return _record(rows[0]) if rows else None

    def was_evicted(self, prediction_id: str) -> bool:
        """Evicted, and not written again since."""
        return self._finished.was_evicted(prediction_id) and not self._query(
            "SELECT 1 FROM unfinished WHERE id = ?", (prediction_id,))

    def page(self, kind: str, status: str | None, limit: int, cursor: str | None) -> interface.Page:
        where = "kind = :kind"
        args: dict[str, object] = {"kind": kind, "limit": limit + 1}
        if status is not None:
            where += " AND status = :status"
            args["status"] = status
        after = None
        if cursor is not None:
            after = args["created"], args["after"] = interface.parse_cursor(cursor)
            where += " AND (created < :created OR (created = :created AND id < :after))"
        # the newest `limit + 1` of both tables, merged (one read transaction)
        unfinished = f"SELECT created, id, body FROM unfinished WHERE {where} " \
                     "ORDER BY created DESC, id DESC LIMIT :limit"

        def both(db: sqlite3.Connection) -> list[tuple[float, str, bytes]]:
            return [*db.execute(unfinished, args).fetchall(),
                    *self._finished.page(db, kind, status, after, limit + 1)]

        rows = sorted(self._read(both), reverse=True)
        following = interface.cursor_of(rows[limit - 1][0], rows[limit - 1][1]) \
            if len(rows) > limit else None
        return interface.Page([row[2] for row in rows[:limit]], following)

    def claim(self, owner: str) -> interface.Claimed:
        """The only writer: everything unfinished (and every pending hook) is orphaned."""
        records = [_record(row) for row in self._query(
            f"{_UNFINISHED} WHERE owner != ? ORDER BY created", (owner,))]
        hooks = [interface.Hook(*row) for row in self._query(
            "SELECT id, seq, delivery, url, body, headers FROM outbox ORDER BY id, seq", ())]
        return interface.Claimed(records, hooks)

    def heartbeat(self, owner: str, lease: float) -> None:
        pass  # the file lock says it

    def close(self, owner: str) -> None:
        if self._writer is not None and not self._finished.stale:
            try:
                self._finished.save_evicted(self._writer)
            except sqlite3.Error as exc:  # they only advise: the store closes all the same
                log.warning("the prediction store %s could not keep its evicted ids: %s",
                            self.path, exc)
        for db in (self._writer, self._reader):
            if db is not None:
                db.close()
        self._writer = self._reader = None
        self._unlock()

    def _unlock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # the lock goes with the descriptor
            self._lock_fd = -1

    def _read(self, read: Callable[..., _T], *args: Any) -> _T:
        """`read(reader, *args)` in one read transaction."""
        try:
            with self._reading:
                db = self._reader
                assert db is not None, "closed"
                db.execute("BEGIN")
                try:
                    return read(db, *args)
                finally:
                    db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"reading the prediction store {self.path} failed: {exc}") from exc

    def _query(self, sql: str, args: Sequence[object] | dict[str, object]
               ) -> list[tuple[Any, ...]]:
        try:
            with self._reading:
                assert self._reader is not None, "closed"
                return self._reader.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"reading the prediction store {self.path} failed: {exc}") from exc


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Its statements one by one, in the transaction open (`executescript` commits)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    assert not statement.strip(), statement


def _connect(path: str) -> sqlite3.Connection:
    # autocommit (transactions are explicit); used by one thread at a time, not always
    # the one that opened it
    db = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=5000")
    # freed pages are not overwritten with zeros (Debian's SQLite is built to): each batch
    # of finished predictions frees the pages of the one evicted, and zeroing them wrote
    # them to the WAL too, 53 frames per commit of 256 predictions instead of 30 (1.4x
    # the writer's CPU). What they held (evicted bodies, deleted unfinished records) stays
    # in the file's free pages until they are used again: by the next batches while the
    # store turns over at its bound, not at all on a server that goes idle.
    db.execute("PRAGMA secure_delete=OFF")
    return db


def _record(row: tuple[Any, ...]) -> interface.Record:
    prediction_id, kind, status, stage, created, body, finished, request = row
    assert isinstance(prediction_id, str) and isinstance(kind, str) and isinstance(status, str)
    assert isinstance(stage, str) and isinstance(created, float) and isinstance(body, bytes)
    return interface.Record(prediction_id, kind, status, interface.Stage(stage), created,
                            body, finished if isinstance(finished, float) else None,
                            request if isinstance(request, bytes) else None)


def _read_pid(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode().strip()
    except (OSError, UnicodeDecodeError):
        return ""
