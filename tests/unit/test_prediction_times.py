"""A prediction's times, kept as microseconds since the epoch: the same datetimes, the
same ISO strings and the same differences as the datetimes they stand for."""

from __future__ import annotations

import datetime
import random

from cogserve.runtime import prediction as module
from cogserve.runtime.prediction import Prediction, datetime_of, iso_us, now_us, us_of

from .helpers import run

UTC = datetime.UTC


def test_iso_strings_are_isoformats_and_datetimes_round_trip() -> None:
    rng = random.Random(24)
    start = now_us()
    samples = [start + rng.randrange(-10**13, 10**13) for _ in range(2000)]
    samples += [start - start % 1_000_000, 0, 1, 999_999, 1_000_000, start]
    samples += [s - s % 1_000_000 + 999_999 for s in samples[:50]]
    for us in samples:
        module._second = (-1, "")  # half of them formatted afresh, half from the cache
        for _ in range(2):
            dt = datetime_of(us)
            assert dt is not None
            assert iso_us(us) == dt.isoformat()
            assert us_of(dt) == us
    assert iso_us(None) is None and datetime_of(None) is None and us_of(None) is None


def test_now_reads_the_clock_as_datetime_now_does() -> None:
    before = datetime.datetime.now(UTC)
    us = now_us()
    after = datetime.datetime.now(UTC)
    dt = datetime_of(us)
    assert dt is not None and before <= dt <= after


def test_the_times_read_and_set_as_datetimes() -> None:
    async def body() -> None:
        prediction = Prediction("p", {})
        assert isinstance(prediction.created_at, datetime.datetime)
        assert prediction.started_at is None and prediction.completed_at is None
        assert prediction.queue_wait() is None
        created = datetime.datetime(2026, 11, 24, 20, 0, 0, 123456, tzinfo=UTC)
        prediction.created_at = created
        prediction.started_at = created + datetime.timedelta(microseconds=2500)
        assert prediction.created_at == created
        assert prediction.queue_wait() == (prediction.started_at - created).total_seconds()
        prediction.succeed("out", None)
        completed, started = prediction.completed_at, prediction.started_at
        assert completed is not None and started is not None
        assert prediction.predict_time == (completed - started).total_seconds()
        doc = prediction.to_dict()
        assert doc["created_at"] == "2026-11-24T20:00:00.123456+00:00"
        assert doc["started_at"] == started.isoformat()
        assert doc["completed_at"] == completed.isoformat()
    run(body)
