"""The prediction store: one interface (`interface.PredictionStore`), its backends, and
what the server does with it. Only the runtime reaches it (import-linter), through the
facade (`Service`), which asks `keeper.Store`.

- `keeper.py`: `Store`, the store as the facade sees it: the cache in front, the
  durable backend (or none) behind; the stored half of `Service.lookup`
- `cache.py`: recently finished predictions in memory (`--store memory` keeps only it)
- `interface.py`: `PredictionStore`, what a durable backend does, and what it keeps
- `sqlite_backend.py` (+ `sqlite_finished.py`: finished sync ones in bulk),
  `redis_backend.py`: the backends; `backends.py` opens the one `--store` chose
- `durable.py`: the writer thread every write goes through, the webhook outbox
- `recovery.py`: what a server does with the work a dead one left; the stored request
- `listing.py`: `GET /predictions`, a page at a time
"""
