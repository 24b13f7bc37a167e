"""Opening the prediction store that `--store` chose (`settings.StoreChoice`): a
backend of `runtime/store/interface.py`, or none for `memory` (the server keeps what it
always kept in memory: `runtime/store/cache.py`)."""

from __future__ import annotations

from cogserve.runtime.settings import Settings, StoreChoice, StoreKind
from cogserve.runtime.store.durable import Durable
from cogserve.runtime.store.interface import Bounds, PredictionStore


def open_store(choice: StoreChoice, namespace: str) -> PredictionStore | None:
    """The store, opened (raises StoreError, saying what is wrong and the way out);
    None for `memory`. `namespace` keeps models apart in a shared Redis."""
    if choice.kind is StoreKind.SQLITE:
        from cogserve.runtime.store.sqlite_backend import SQLiteStore

        return SQLiteStore(choice.location)
    if choice.kind is StoreKind.REDIS:
        from cogserve.runtime.store.redis_backend import RedisStore

        return RedisStore(choice.location, namespace)
    return None


def open_durable(settings: Settings, namespace: str) -> Durable | None:
    """The durable side of `settings.store` (None for `memory`), bounded as the
    settings say; `namespace` (the model's name) keeps models apart in a shared store."""
    store = open_store(settings.store, namespace)
    if store is None:
        return None
    return Durable(store, Bounds(settings.recent_count, settings.recent_bytes,
                                 settings.recent_age), settings.store_lease)
