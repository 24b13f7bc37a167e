"""The durable prediction stores (runtime/store/sqlite_backend.py,
runtime/store/redis_backend.py) through their one interface: the same tests for both, on a
real SQLite file and a real redis-server (Debian's, started here and ended by pid); then what
only one of them does (the file's refusals at start, Redis unreachable), and the writer
(`Durable`)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
import sqlite3
import time
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
import pytest
from redisproc import RedisProcess

from cogserve.runtime.errors import StoreError
from cogserve.runtime.prediction import Prediction
from cogserve.runtime.settings import IN_MEMORY, StoreKind
from cogserve.runtime.settings import choose_store as choose
from cogserve.runtime.settings import default_store_path as default_path
from cogserve.runtime.store import redis_backend as redis_store
from cogserve.runtime.store import sqlite_backend as sqlite_store
from cogserve.runtime.store.durable import SYNC_BATCH, Durable
from cogserve.runtime.store.interface import (
    Bounds,
    Claimed,
    Dropped,
    FinishedBatch,
    Hook,
    HookDone,
    Page,
    PredictionStore,
    Record,
    Row,
    Stage,
    Write,
)
from cogserve.runtime.store.redis_backend import RedisStore
from cogserve.runtime.store.sqlite_backend import SQLiteStore
from cogserve.wire.states import Event

WIDE = Bounds(1000, 1 << 30)


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisProcess]:
    server = RedisProcess()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path, redis_server) -> Iterator[PredictionStore]:
    opened: PredictionStore
    if request.param == "sqlite":
        opened = SQLiteStore(str(tmp_path / "store.sqlite3"))
    else:  # a namespace per test: the module's redis-server is shared
        opened = RedisStore(redis_server.url, f"t{time.monotonic_ns()}")
    try:
        yield opened
    finally:
        opened.close("me")


def rec(prediction_id: str, stage: Stage = Stage.FINISHED, *, status: str = "succeeded",
        created: float = 1.0, finished: float | None = None, size: int = 0,
        request: bytes | None = None, kind: str = "prediction") -> Record:
    body = orjson.dumps({"id": prediction_id, "status": status, "pad": "x" * size})
    return Record(prediction_id, kind, status, stage, created, body,
                  (finished or created) if stage is Stage.FINISHED else None, request)


def ids(page: Page) -> list[str]:
    return [orjson.loads(body)["id"] for body in page.bodies]


def test_a_record_goes_through_its_stages_and_keeps_its_request_until_it_finished(store):
    store.write([rec("a", Stage.QUEUED, status="starting", request=b'{"input":1}')], WIDE, "me")
    got = store.get("a")
    assert got is not None and got.stage is Stage.QUEUED and got.request == b'{"input":1}'
    store.write([rec("a", Stage.RUNNING, status="processing")], WIDE, "me")
    got = store.get("a")
    assert got is not None and got.stage is Stage.RUNNING and got.request == b'{"input":1}'
    store.write([rec("a", finished=5.0)], WIDE, "me")
    got = store.get("a")
    assert got is not None and got.stage is Stage.FINISHED and got.finished == 5.0
    assert orjson.loads(got.body)["status"] == "succeeded" and got.request is None
    assert store.get("never") is None


def test_a_big_body_is_stored_whole_and_in_order(store):
    big = rec("big", Stage.RUNNING, status="processing", size=3 << 20, request=b"{}")
    store.write([big, rec("big", finished=2.0, size=3 << 20), rec("small", finished=3.0)],
                WIDE, "me")
    got = store.get("big")
    assert got is not None and got.stage is Stage.FINISHED and got.body == rec(
        "big", finished=2.0, size=3 << 20).body
    store.write([rec("x", finished=4.0, size=3 << 20)], Bounds(100, len(got.body) + 10), "me")
    assert store.get("big") is None and store.was_evicted("big")  # its bytes were counted


def test_finished_ones_are_bounded_by_count_oldest_first(store):
    store.write([rec(f"c{i}", created=i, finished=i) for i in range(5)], Bounds(3, 1 << 30), "me")
    assert [store.get(f"c{i}") is not None for i in range(5)] == [False, False, True, True, True]
    assert store.was_evicted("c0") and store.was_evicted("c1")
    assert not store.was_evicted("c4") and not store.was_evicted("never")


def test_finished_ones_are_bounded_by_bytes(store):
    big = [rec(f"b{i}", created=i, finished=i, size=1000) for i in range(4)]
    size = len(big[0].body)
    store.write(big, Bounds(100, 2 * size + 10), "me")
    assert [store.get(f"b{i}") is not None for i in range(4)] == [False, False, True, True]


def test_finished_ones_are_bounded_by_age_and_unfinished_ones_never_are(store):
    now = time.time()
    store.write([rec("old", created=now - 100, finished=now - 100),
                 rec("new", created=now, finished=now),
                 rec("waiting", Stage.QUEUED, status="starting", created=now - 1000,
                     request=b"{}")], Bounds(1, 1, age=50), "me")
    assert store.get("old") is None and store.was_evicted("old")
    assert store.get("waiting") is not None  # bounds apply to finished ones only


def test_a_finished_id_written_again_is_counted_once(store):
    for _ in range(3):
        store.write([rec("same", finished=1.0)], Bounds(2, 1 << 30), "me")
    store.write([rec("other", finished=2.0)], Bounds(2, 1 << 30), "me")
    assert store.get("same") is not None and store.get("other") is not None


def test_a_dropped_one_is_forgotten_and_said_evicted(store):
    store.write([rec("big", Stage.RUNNING, status="processing", request=b"{}"),
                 rec("kept", finished=2.0)], Bounds(1, 1 << 30), "me")
    store.write([Dropped("big")], Bounds(1, 1 << 30), "me")
    assert store.get("big") is None and store.was_evicted("big")
    assert store.claim("someone-else").records == []  # nothing left to recover
    assert store.get("kept") is not None  # the count bound did not count it


def test_listing_is_newest_first_by_status_and_pages_without_gaps(store):
    writes: list[Write] = [rec(f"p{i:02}", created=float(i),
                               status="failed" if i % 3 == 0 else "succeeded")
                           for i in range(20)]
    writes.append(rec("t1", created=30.0, kind="training"))
    writes.append(rec("tie", created=10.0))  # same created as p10: ordered by id
    store.write(writes, WIDE, "me")
    seen: list[str] = []
    cursor = None
    while True:
        page = store.page("prediction", None, 6, cursor)
        seen += ids(page)
        if page.next is None:
            break
        cursor = page.next
    expected = sorted([(float(i), f"p{i:02}") for i in range(20)] + [(10.0, "tie")],
                      reverse=True)
    assert seen == [pid for _, pid in expected]
    failed = store.page("prediction", "failed", 100, None)
    assert ids(failed) == [f"p{i:02}" for i in (18, 15, 12, 9, 6, 3, 0)] and failed.next is None
    assert ids(store.page("training", None, 10, None)) == ["t1"]


def items(prefix: str, count: int, *, created: float = 0.0, size: int = 0,
          status: str = "succeeded") -> list[Row]:
    return [(f"{prefix}{i:03}", "prediction", status, created + i,
             orjson.dumps({"id": f"{prefix}{i:03}", "status": status, "pad": "x" * size}))
            for i in range(count)]


def rows(prefix: str, count: int, **options: Any) -> FinishedBatch:
    """`count` finished sync predictions, in one batch as the loop hands it over."""
    return FinishedBatch(items(prefix, count, **options))


def test_finished_rows_in_bulk_are_kept_bounded_and_listed_like_records(store):
    store.write([rows("s", 150)], Bounds(100, 1 << 30), "me")  # 64 + 64 + 16 + 4 + 2
    assert store.get("s049") is None and store.was_evicted("s049")
    got = store.get("s149")
    assert got is not None and got.stage is Stage.FINISHED and got.status == "succeeded"
    assert got.created == 149.0 and got.request is None and got.finished is not None
    assert orjson.loads(got.body)["id"] == "s149"
    page = store.page("prediction", None, 3, None)
    assert ids(page) == ["s149", "s148", "s147"] and page.next is not None
    assert ids(store.page("prediction", None, 2, page.next)) == ["s146", "s145"]
    assert ids(store.page("prediction", "failed", 5, None)) == []
    # the count bound counts rows and records alike; a record finished after them is newer
    later = time.time() + 1
    store.write([rec("r", created=later, finished=later)], Bounds(100, 1 << 30), "me")
    assert store.get("s050") is None and store.get("s051") is not None


def test_finished_rows_in_bulk_are_bounded_by_bytes_and_age_one_by_one(store):
    batch = rows("y", 10, size=100)
    size = len(batch.rows[0][4])
    store.write([batch], Bounds(100, 3 * size + 10), "me")  # one batch, cut within it
    assert [store.get(f"y00{i}") is not None for i in range(10)] == [False] * 7 + [True] * 3
    assert store.was_evicted("y006") and not store.was_evicted("y007")
    store.write([rows("z", 2, size=100)], Bounds(100, 3 * size + 10), "me")
    assert [store.get(i) is not None for i in ("y008", "y009", "z000", "z001")] == [
        False, True, True, True]
    store.write([rows("w", 1)], Bounds(100, 1 << 30, age=0.000001), "me")  # all older go
    assert store.get("z001") is None and store.was_evicted("z001")


def test_a_finished_row_written_again_replaces_the_older_one(store):
    store.write([rec("again", Stage.RUNNING, status="processing", request=b"{}")], WIDE, "me")
    three = items("x", 3)
    twice = FinishedBatch([*three, three[0]])  # the same id twice in one batch: the later wins
    ended = FinishedBatch([("again", "prediction", "succeeded", 1.0, b'{"id":"again"}')])
    store.write([ended, twice], WIDE, "me")
    store.write([rows("x", 1, status="failed")], Bounds(4, 1 << 30), "me")
    got = store.get("x000")
    assert got is not None and got.status == "failed"  # the newest write
    assert store.claim("someone-else").records == []  # `again` finished: not unfinished
    # one row each: four ids within a count bound of four, none evicted
    assert all(store.get(i) is not None for i in ("again", "x000", "x001", "x002"))
    assert ids(store.page("prediction", None, 10, None)).count("x000") == 1


def test_finished_rows_with_a_big_body_are_stored_whole(store):
    some = items("b", 3)
    big = orjson.dumps({"id": "big", "pad": "y" * (3 << 20)})
    some.insert(1, ("big", "prediction", "succeeded", 0.5, big))
    store.write([FinishedBatch(some)], WIDE, "me")
    got = store.get("big")
    assert got is not None and got.body == big
    assert [store.get(f"b00{i}") is not None for i in range(3)] == [True, True, True]
    store.write([rows("c", 1)], Bounds(100, len(big)), "me")  # its bytes were counted
    assert store.get("big") is None and store.was_evicted("big")


def test_claim_takes_the_unfinished_work_of_a_gone_owner_once(store):
    store.write([rec("q", Stage.QUEUED, status="starting", created=2.0, request=b"{}"),
                 rec("r", Stage.RUNNING, status="processing", created=1.0, request=b"{}"),
                 rec("f", finished=3.0),
                 Hook("f", 2, "completed", "http://x/hook", b'{"b":2}'),
                 Hook("f", 1, "start", "http://x/hook", b'{"b":1}'),
                 Hook("f", 3, "update", "http://x/hook", b'{"b":3}'),
                 HookDone("f", 3)], WIDE, "dead")
    claimed = store.claim("me")
    assert [r.id for r in claimed.records] == ["r", "q"]  # oldest first
    assert [(h.seq, h.delivery, h.body) for h in claimed.hooks] == [
        (1, "start", b'{"b":1}'), (2, "completed", b'{"b":2}')]
    assert claimed.hooks[0].url == "http://x/hook"
    if store.shared:  # mine now: a second sweep (mine or a replica's) takes nothing
        store.heartbeat("me", 30.0)
        assert store.claim("me") == Claimed() and store.claim("other").records == []


def test_a_replaced_hook_is_sent_once_with_the_newer_body(store):
    store.write([Hook("h", 7, "update", "http://x/", b"old")], WIDE, "dead")
    store.write([Hook("h", 7, "update", "http://x/", b"new")], WIDE, "dead")
    assert [h.body for h in store.claim("me").hooks] == [b"new"]


def test_a_live_replica_keeps_its_work_and_a_dead_ones_is_taken(redis_server):
    alive = RedisStore(redis_server.url, "leases")
    other = RedisStore(redis_server.url, "leases")
    try:
        alive.heartbeat("alive", 30.0)
        alive.write([rec("mine", Stage.RUNNING, status="processing", request=b"{}")], WIDE,
                    "alive")
        other.write([rec("orphan", Stage.RUNNING, status="processing", request=b"{}")], WIDE,
                    "dead")
        assert [r.id for r in other.claim("other").records] == ["orphan"]
        assert alive.get("mine") is not None and other.get("mine") is not None
        alive.close("alive")  # a clean exit ends its lease at once
        assert [r.id for r in other.claim("other").records] == ["mine"]
    finally:
        other.close("other")


def test_redis_unreachable_at_start_is_a_clear_error():
    with pytest.raises(StoreError, match="cannot be reached.*--store memory"):
        RedisStore("redis://127.0.0.1:1/0", "x")


LAYOUT_1 = """
CREATE TABLE records (id TEXT PRIMARY KEY, kind TEXT NOT NULL, status TEXT NOT NULL,
    stage TEXT NOT NULL, created REAL NOT NULL, finished REAL, request BLOB,
    owner TEXT NOT NULL, body BLOB NOT NULL);
CREATE INDEX records_listing ON records (kind, created DESC, id DESC);
CREATE TABLE outbox (id TEXT NOT NULL, seq INTEGER NOT NULL, delivery TEXT NOT NULL,
    url TEXT NOT NULL, body BLOB NOT NULL, headers BLOB NOT NULL, PRIMARY KEY (id, seq));
CREATE TABLE evicted (n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE);
CREATE TABLE totals (one INTEGER PRIMARY KEY CHECK (one = 1), count INTEGER NOT NULL,
    bytes INTEGER NOT NULL);
CREATE TRIGGER totals_insert AFTER INSERT ON records WHEN new.finished IS NOT NULL BEGIN
    UPDATE totals SET count = count + 1, bytes = bytes + length(new.body); END;
INSERT INTO totals VALUES (1, 0, 0);
INSERT INTO records VALUES ('late', 'prediction', 'succeeded', 'finished', 2.0, 9.0, NULL,
    'old', CAST('{"id":"late"}' AS BLOB));
INSERT INTO records VALUES ('early', 'prediction', 'failed', 'finished', 3.0, 5.0, NULL,
    'old', CAST('{"id":"early"}' AS BLOB));
INSERT INTO records VALUES ('waiting', 'prediction', 'starting', 'queued', 4.0, NULL,
    CAST('{"input":1}' AS BLOB), 'old', CAST('{"id":"waiting"}' AS BLOB));
INSERT INTO outbox VALUES ('late', 1, 'completed', 'http://x/', X'7B7D', X'7B7D');
INSERT INTO evicted (id) VALUES ('gone');
PRAGMA user_version = 1;
"""


def test_a_file_of_layout_1_is_converted_when_opened(tmp_path):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(LAYOUT_1)
    store = SQLiteStore(str(path))
    try:
        claimed = store.claim("me")
        assert [r.id for r in claimed.records] == ["waiting"]
        assert claimed.records[0].request == b'{"input":1}'
        assert [h.id for h in claimed.hooks] == ["late"]
        late = store.get("late")
        assert late is not None and late.stage is Stage.FINISHED and late.finished == 9.0
        assert store.was_evicted("gone") and not store.was_evicted("late")
        assert ids(store.page("prediction", None, 10, None)) == ["waiting", "early", "late"]
        # the oldest to finish goes first
        store.write([rec("new", created=10.0, finished=10.0)], Bounds(2, 1 << 30), "me")
        assert store.get("early") is None and store.get("late") is not None
    finally:
        store.close("me")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == sqlite_store.LAYOUT
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        assert "records" not in tables and "totals" not in tables


LAYOUT_2 = """
CREATE TABLE unfinished (id TEXT PRIMARY KEY, kind TEXT NOT NULL, status TEXT NOT NULL,
    stage TEXT NOT NULL, created REAL NOT NULL, request BLOB, owner TEXT NOT NULL,
    body BLOB NOT NULL);
CREATE TABLE finished (n INTEGER PRIMARY KEY, id TEXT NOT NULL, kind TEXT NOT NULL,
    status TEXT NOT NULL, created REAL NOT NULL, finished REAL NOT NULL, body BLOB NOT NULL);
CREATE TABLE outbox (id TEXT NOT NULL, seq INTEGER NOT NULL, delivery TEXT NOT NULL,
    url TEXT NOT NULL, body BLOB NOT NULL, headers BLOB NOT NULL, PRIMARY KEY (id, seq));
CREATE TABLE evicted (n INTEGER PRIMARY KEY, id TEXT NOT NULL);
INSERT INTO finished (id, kind, status, created, finished, body) VALUES
    ('a', 'prediction', 'succeeded', 1.0, 5.0, CAST('{"id":"a"}' AS BLOB)),
    ('b', 'training', 'failed', 2.0, 5.0, CAST('{"id":"b"}' AS BLOB)),
    ('c', 'prediction', 'failed', 3.0, 6.0, CAST('{"id":"c"}' AS BLOB));
INSERT INTO unfinished VALUES ('waiting', 'prediction', 'starting', 'queued', 4.0,
    CAST('{"input":1}' AS BLOB), 'old', CAST('{"id":"waiting"}' AS BLOB));
INSERT INTO evicted (id) VALUES ('gone');
PRAGMA user_version = 2;
"""


def test_a_file_of_layout_2_is_converted_when_opened(tmp_path):
    path = tmp_path / "old.sqlite3"
    big = orjson.dumps({"id": "big", "pad": "z" * (2 << 20)})
    with sqlite3.connect(path) as db:
        db.executescript(LAYOUT_2)
        db.execute("INSERT INTO finished (id, kind, status, created, finished, body) "
                   "VALUES ('big', 'prediction', 'succeeded', 3.5, 7.0, ?)", (big,))
    store = SQLiteStore(str(path))
    try:
        assert [r.id for r in store.claim("me").records] == ["waiting"]
        got = store.get("b")
        assert got is not None and (got.kind, got.status, got.created, got.finished,
                                    got.body) == ("training", "failed", 2.0, 5.0,
                                                  b'{"id":"b"}')
        got = store.get("big")
        assert got is not None and got.body == big and got.finished == 7.0
        assert store.was_evicted("gone") and not store.was_evicted("a")
        assert ids(store.page("prediction", None, 10, None)) == ["waiting", "big", "c", "a"]
        assert ids(store.page("prediction", "failed", 10, None)) == ["c"]
        # the oldest written go first: a, then b (a batch then), then c
        store.write([rows("n", 1)], Bounds(4, 1 << 30), "me")
        assert [store.get(i) is not None for i in "abc"] == [False, True, True]
        assert store.was_evicted("a")
    finally:
        store.close("me")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == sqlite_store.LAYOUT
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        assert "finished_2" not in tables
    again = SQLiteStore(str(path))  # and read back as written
    try:
        assert [again.get(i) is not None for i in ("a", "b", "c", "big", "n000")] == [
            False, True, True, True, True]
    finally:
        again.close("me")


def test_evicted_ids_are_remembered_across_a_clean_restart(tmp_path):
    path = str(tmp_path / "store.sqlite3")
    store = SQLiteStore(path)
    store.write([rows("e", 5), Dropped("e004")], Bounds(2, 1 << 30), "me")
    gone = [True, True, False, False, True]  # the two oldest, and the one dropped
    assert [store.was_evicted(f"e00{i}") for i in range(5)] == gone
    store.close("me")  # they are written as it closes (a killed server forgets its run's)
    again = SQLiteStore(path)
    try:
        assert [again.was_evicted(f"e00{i}") for i in range(5)] == gone
        # one row held all five: its evicted first two and its dropped one stay gone
        assert [again.get(f"e00{i}") is None for i in range(5)] == gone
        again.write([rows("e", 1)], Bounds(2, 1 << 30), "me")  # e000 is held again
        assert not again.was_evicted("e000") and again.get("e000") is not None
    finally:
        again.close("me")


@pytest.mark.parametrize("seed", range(20))
def test_finished_rows_match_a_plain_model_through_random_writes_and_restarts(tmp_path, seed):
    """Batches with ids written again (in one batch too), records unfinished again,
    drops, count and byte bounds, restarts: GET, evicted and the listing as a dict
    of finished ones (oldest first) says."""
    rnd = random.Random(seed)
    path = str(tmp_path / "store.sqlite3")
    store = SQLiteStore(path)
    model: dict[str, bytes] = {}
    unfinished: dict[str, bytes] = {}
    evicted: set[str] = set()
    count, size = rnd.randint(1, 12), rnd.choice([1 << 30, rnd.randint(20, 300)])
    clock = 0
    try:
        for step in range(60):
            writes: list[Write] = []
            for _ in range(rnd.randint(1, 3)):
                choice = rnd.random()
                if choice < 0.1 and model:
                    gone = rnd.choice(list(model))
                    writes.append(Dropped(gone))
                    model.pop(gone)
                    evicted.add(gone)
                    continue
                if choice < 0.2:
                    again = f"i{rnd.randint(0, 30)}"
                    clock += 1
                    body = orjson.dumps({"id": again, "u": clock})
                    writes.append(Record(again, "prediction", "processing", Stage.RUNNING,
                                         float(clock), body, None, b"{}"))
                    model.pop(again, None)
                    unfinished[again] = body
                    continue
                batch: list[Row] = []
                for _ in range(rnd.randint(1, 8)):
                    new = f"i{rnd.randint(0, 30)}"
                    clock += 1
                    body = orjson.dumps({"id": new, "t": clock})
                    batch.append((new, "prediction", rnd.choice(["succeeded", "failed"]),
                                  float(clock), body))
                    model.pop(new, None)
                    model[new] = body
                    evicted.discard(new)
                    unfinished.pop(new, None)
                writes.append(FinishedBatch(batch))
            store.write(writes, Bounds(count, size), "me")
            while len(model) > count or sum(map(len, model.values())) > size:
                oldest = next(iter(model))
                model.pop(oldest)
                evicted.add(oldest)
            if rnd.random() < 0.2:
                store.close("me")
                store = SQLiteStore(path)
            for i in range(31):
                got = store.get(f"i{i}")
                assert (got and got.body) == model.get(f"i{i}", unfinished.get(f"i{i}")), step
                if f"i{i}" in evicted and f"i{i}" not in unfinished:
                    assert store.was_evicted(f"i{i}"), step
            assert sorted(store.page("prediction", None, 100, None).bodies) == sorted(
                [*model.values(), *unfinished.values()]), step
    finally:
        store.close("me")


def test_a_write_that_fails_changes_nothing_and_the_next_one_goes_through(tmp_path,
                                                                        monkeypatch):
    store = SQLiteStore(str(tmp_path / "store.sqlite3"))
    try:
        store.write([rows("kept", 2)], WIDE, "me")

        def broken(*args: object) -> None:
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(sqlite_store.FinishedRows, "evict", broken)
        with pytest.raises(StoreError, match="disk I/O error"):
            store.write([rows("lost", 2), Dropped("kept000")], WIDE, "me")
        monkeypatch.undo()
        assert store.get("lost000") is None and store.get("kept000") is not None
        assert not store.was_evicted("kept000")
        store.write([rows("later", 2)], Bounds(3, 1 << 30), "me")
        assert [store.get(i) is not None for i in ("kept000", "kept001", "later000",
                                                   "later001")] == [False, True, True, True]
    finally:
        store.close("me")


def test_a_store_from_a_newer_cogserve_is_refused(tmp_path, redis_server):
    path = tmp_path / "newer.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {sqlite_store.LAYOUT + 1}")
    with pytest.raises(StoreError, match="newer cogserve.*--store memory"):
        SQLiteStore(str(path))
    store = RedisStore(redis_server.url, "newer")
    store.client.set("cogserve:newer:version", redis_store.LAYOUT + 1)
    store.close("me")
    with pytest.raises(StoreError, match="newer cogserve.*--store memory"):
        RedisStore(redis_server.url, "newer")


def test_a_file_used_by_another_server_is_refused_and_free_again_once_closed(tmp_path):
    path = str(tmp_path / "shared.sqlite3")
    first = SQLiteStore(path)
    with pytest.raises(StoreError, match=rf"in use by another cogserve \(pid {os.getpid()}\)"
                                         ".*--store memory"):
        SQLiteStore(path)
    first.close("me")
    SQLiteStore(path).close("me")


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    path = tmp_path / "corrupt.sqlite3"
    path.write_bytes(b"this is not a database" * 300)
    with pytest.raises(StoreError, match="cannot be used.*--store memory"):
        SQLiteStore(str(path))


def test_a_database_with_damaged_pages_is_refused(tmp_path):
    path = tmp_path / "damaged.sqlite3"
    store = SQLiteStore(str(path))
    store.write([rec(f"d{i}", created=i, size=3000) for i in range(40)], WIDE, "me")
    store.close("me")
    with sqlite3.connect(path) as db:  # fold the WAL into the file, then break a page
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[4096 * 3: 4096 * 3 + 2048] = os.urandom(2048)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="(corrupt|cannot be used).*--store memory"):
        SQLiteStore(str(path))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_refused(tmp_path):
    path = tmp_path / "locked.sqlite3"
    SQLiteStore(str(path)).close("me")
    path.chmod(0)
    with pytest.raises(StoreError, match="cannot be read.*--store memory"):
        SQLiteStore(str(path))


def test_a_folder_that_cannot_be_made_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreError, match="cannot open.*--store memory"):
        SQLiteStore(str(tmp_path / "file" / "store.sqlite3"))


def test_the_store_choice(tmp_path, monkeypatch):
    monkeypatch.setenv("COGSERVE_STATE_DIR", str(tmp_path / "state"))
    model = tmp_path / "my model"
    assert choose("memory", model, 5000) is IN_MEMORY
    assert choose(" MEMORY ", model, 5000) is IN_MEMORY
    redis = choose("redis://h:1/2", model, 5000)
    assert redis.kind is StoreKind.REDIS and redis.location == "redis://h:1/2"
    explicit = choose("x/y.db", model, 5000)
    assert explicit.kind is StoreKind.SQLITE and explicit.location == os.path.abspath("x/y.db")
    default = choose("", model, 5000)  # unset: the default, a file of its own
    assert default == choose(" SQLite ", model, 5000) and default.kind is StoreKind.SQLITE
    assert default.location == str(default_path(model, 5000))
    assert default.location.startswith(str(tmp_path / "state" / "predictions" / "my_model-"))
    # one file per model folder and port
    assert default_path(model, 5001) != default_path(model, 5000)
    assert default_path(tmp_path / "other" / "my model", 5000) != default_path(model, 5000)


# ---------------------------------------------------------------- the writer


class Flaky(PredictionStore):
    """A store that fails while `down` (a backend behind a network that went away)."""

    description = "flaky"
    shared = False

    def __init__(self) -> None:
        self.down = False
        self.batches: list[list[Write]] = []

    def write(self, batch: Sequence[Write], bounds: Bounds, owner: str) -> None:
        if self.down:
            raise StoreError("connection refused")
        self.batches.append(list(batch))

    def get(self, prediction_id: str) -> Record | None:
        return None

    def was_evicted(self, prediction_id: str) -> bool:
        return False

    def page(self, kind: str, status: str | None, limit: int, cursor: str | None) -> Page:
        return Page([], None)

    def claim(self, owner: str) -> Claimed:
        return Claimed()

    def heartbeat(self, owner: str, lease: float) -> None:
        pass

    def close(self, owner: str) -> None:
        pass


async def _until(check, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition never held"
        await asyncio.sleep(0.005)


def test_the_writer_keeps_writes_in_order_through_an_outage_and_says_so_meanwhile():
    async def body() -> None:
        store = Flaky()
        durable = Durable(store, WIDE)
        await durable.start()
        store.down = True
        waited = durable.post_waited([rec("a")])
        with pytest.raises(StoreError):
            await asyncio.wrap_future(waited)
        await _until(lambda: durable.failure is not None)
        assert "connection refused" in (durable.failure or "")
        durable.post([rec("b")])
        durable.post([HookDone("a", 1)])
        store.down = False
        await _until(lambda: durable.failure is None)
        written = [w.id for batch in store.batches for w in batch]
        assert written == ["a", "b", "a"]  # nothing lost, nothing reordered
        await durable.close()

    asyncio.run(body())


def test_the_writer_writes_what_was_posted_before_close():
    async def body() -> None:
        store = Flaky()
        durable = Durable(store, WIDE)
        await durable.start()
        for i in range(50):
            durable.post([rec(f"w{i}")])
        await durable.close()
        assert [w.id for batch in store.batches for w in batch] == [f"w{i}" for i in range(50)]

    asyncio.run(body())


def test_post_waited_settles_once_written():
    async def body() -> None:
        store = Flaky()
        durable = Durable(store, WIDE)
        await durable.start()
        future: concurrent.futures.Future[None] = durable.post_waited([rec("x")])
        await asyncio.wrap_future(future)
        assert store.batches and store.batches[-1][-1].id == "x"
        await durable.close()

    asyncio.run(body())


def test_finished_sync_predictions_reach_the_store_as_rows_a_batch_at_a_time():
    async def body() -> None:
        store = Flaky()
        durable = Durable(store, WIDE)
        await durable.start()
        made = []
        for i in range(SYNC_BATCH + 3):
            prediction = Prediction(f"s{i}", {"text": "hi"})
            prediction.mark_started()
            prediction.succeed("hi", 0.001)
            durable.listener(prediction, Event.COMPLETED, {})
            made.append(prediction)
        # a full batch goes at once, not at the next flush
        await _until(lambda: any(isinstance(w, FinishedBatch) for b in store.batches for w in b))
        await durable.close()  # the rest at close
        written = [w for b in store.batches for w in b if isinstance(w, FinishedBatch)]
        assert [len(w.rows) for w in written] == [SYNC_BATCH, 3]
        first = written[0].rows[0]
        assert first[:3] == ("s0", "prediction", "succeeded") and type(first[2]) is str
        assert first[3] == made[0].created and first[4] is made[0].encoded()
        assert written[1].rows[-1][0] == made[-1].id

    asyncio.run(body())
