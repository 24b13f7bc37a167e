"""The prediction store shared by replicas: Redis (`--store redis://HOST:PORT/DB`).

Install it with `pip install cogserve[redis]`. Several servers of one model (replicas
under `cogserve ray` or Kubernetes) use one Redis database: any of them answers `GET`
and retried `PUT`s for an id another made, and when one dies, another takes over what
it left unfinished.

Ownership: each server has an owner id and a lease key that it renews (`heartbeat`);
every unfinished record and pending webhook names its owner. `claim`, run at start and
then every lease period, takes over the ones whose owner's lease has expired, in one
Lua script, so two replicas never take the same one.

Every multi-key change is a Lua script (atomic in Redis), and a batch of them runs in
one MULTI/EXEC. Keys start with `cogserve:<model name>:`, so models sharing a Redis do
not meet. A standalone Redis (or a primary): the scripts touch keys they compute, which
Redis Cluster does not allow.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from cogserve.runtime.errors import StoreError
from cogserve.runtime.store import interface

if TYPE_CHECKING:
    import redis

LAYOUT = 1  # the keys' layout: bumped when they change (a newer one is refused at start)
EVICTED_IDS = 10_000
WAY_OUT = "(--store memory serves without it, keeping nothing)"

# one record written: a Lua function the scripts below begin with
_SAVE_ONE = """
local function save(P, owner, id, kind, status, stage, created, finished, body, request)
  local key = P .. 'r:' .. id
  local old = redis.call('HMGET', key, 'kind', 'status', 'finished', 'body')
  if old[1] then
    redis.call('ZREM', P .. 's:' .. old[1] .. ':' .. old[2], id)
    if old[3] then
      redis.call('HINCRBY', P .. 'tot', 'count', -1)
      redis.call('HINCRBY', P .. 'tot', 'bytes', -string.len(old[4]))
    end
  end
  redis.call('HSET', key, 'kind', kind, 'status', status, 'stage', stage, 'created', created,
             'body', body, 'owner', owner)
  redis.call('ZADD', P .. 's:' .. kind, created, id)
  redis.call('ZADD', P .. 's:' .. kind .. ':' .. status, created, id)
  if stage == 'finished' then
    redis.call('HSET', key, 'finished', finished)
    redis.call('HDEL', key, 'request')
    redis.call('ZREM', P .. 'unf', id)
    redis.call('ZADD', P .. 'fin', finished, id)
    redis.call('ZREM', P .. 'ev', id)
    redis.call('HINCRBY', P .. 'tot', 'count', 1)
    redis.call('HINCRBY', P .. 'tot', 'bytes', string.len(body))
  else
    redis.call('HDEL', key, 'finished')
    if request ~= '' then redis.call('HSET', key, 'request', request) end
    redis.call('ZREM', P .. 'fin', id)
    redis.call('ZADD', P .. 'unf', created, id)
  end
end
"""

# ARGV: prefix, owner, then 8 per record: id kind status stage created finished body request
_SAVE = _SAVE_ONE + """
for i = 3, #ARGV, 8 do
  save(ARGV[1], ARGV[2], ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4],
       ARGV[i + 5], ARGV[i + 6], ARGV[i + 7])
end
"""

# interface.FinishedBatch in a few arguments, so the server encodes none per prediction:
# ARGV: prefix, owner, when they finished, [[id, kind, status, created, body length],
# ...] as JSON, the bodies one after another. `created` goes back to text with 17
# digits: the same float.
_FINISH = _SAVE_ONE + """
local bodies, at = ARGV[5], 1
for _, row in ipairs(cjson.decode(ARGV[4])) do
  local length = row[5]
  save(ARGV[1], ARGV[2], row[1], row[2], row[3], 'finished', string.format('%.17g', row[4]),
       ARGV[3], string.sub(bodies, at, at + length - 1), '')
  at = at + length
end
"""

_EVICT = """
local P = ARGV[1]
local maxc, maxb, cutoff, cap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]),
                                tonumber(ARGV[5])
local count = tonumber(redis.call('HGET', P .. 'tot', 'count') or '0')
local bytes = tonumber(redis.call('HGET', P .. 'tot', 'bytes') or '0')
while true do
  local oldest = redis.call('ZRANGE', P .. 'fin', 0, 0, 'WITHSCORES')
  if #oldest == 0 then break end
  if count <= maxc and bytes <= maxb and (cutoff < 0 or tonumber(oldest[2]) >= cutoff) then
    break
  end
  local id = oldest[1]
  local key = P .. 'r:' .. id
  local rec = redis.call('HMGET', key, 'kind', 'status', 'body')
  redis.call('DEL', key)
  redis.call('ZREM', P .. 'fin', id)
  if rec[1] then
    redis.call('ZREM', P .. 's:' .. rec[1], id)
    redis.call('ZREM', P .. 's:' .. rec[1] .. ':' .. rec[2], id)
    count = count - 1
    bytes = bytes - string.len(rec[3])
  end
  redis.call('ZADD', P .. 'ev', oldest[2], id)
end
redis.call('HSET', P .. 'tot', 'count', count, 'bytes', bytes)
local n = redis.call('ZCARD', P .. 'ev')
if n > cap then redis.call('ZREMRANGEBYRANK', P .. 'ev', 0, n - cap - 1) end
"""

_DROP = """
local P, id = ARGV[1], ARGV[2]
local key = P .. 'r:' .. id
local rec = redis.call('HMGET', key, 'kind', 'status', 'body', 'finished')
if rec[1] then
  redis.call('ZREM', P .. 's:' .. rec[1], id)
  redis.call('ZREM', P .. 's:' .. rec[1] .. ':' .. rec[2], id)
  if rec[4] then
    redis.call('HINCRBY', P .. 'tot', 'count', -1)
    redis.call('HINCRBY', P .. 'tot', 'bytes', -string.len(rec[3]))
  end
  redis.call('DEL', key)
  redis.call('ZREM', P .. 'fin', id)
  redis.call('ZREM', P .. 'unf', id)
end
redis.call('ZADD', P .. 'ev', ARGV[3], id)
"""

_HOOK = """
redis.call('HSET', ARGV[1] .. 'h:' .. ARGV[2], ARGV[3], ARGV[4])
redis.call('HSET', ARGV[1] .. 'hooked', ARGV[2], ARGV[5])
"""

_DONE = """
local key = ARGV[1] .. 'h:' .. ARGV[2]
redis.call('HDEL', key, ARGV[3])
if redis.call('HLEN', key) == 0 then redis.call('HDEL', ARGV[1] .. 'hooked', ARGV[2]) end
"""

_CLAIM = """
local P, me = ARGV[1], ARGV[2]
local function gone(owner)
  return owner ~= me and redis.call('EXISTS', P .. 'lease:' .. owner) == 0
end
local records, hooks = {}, {}
for _, id in ipairs(redis.call('ZRANGE', P .. 'unf', 0, -1)) do
  local key = P .. 'r:' .. id
  local owner = redis.call('HGET', key, 'owner')
  if not owner then
    redis.call('ZREM', P .. 'unf', id)
  elseif gone(owner) then
    redis.call('HSET', key, 'owner', me)
    table.insert(records, id)
  end
end
local hooked = redis.call('HGETALL', P .. 'hooked')
for i = 1, #hooked, 2 do
  if gone(hooked[i + 1]) then
    redis.call('HSET', P .. 'hooked', hooked[i], me)
    table.insert(hooks, hooked[i])
  end
end
return {records, hooks}
"""

_FIELDS = ("kind", "status", "stage", "created", "body", "finished", "request")


class RedisStore(interface.PredictionStore):
    shared = True

    def __init__(self, url: str, namespace: str) -> None:
        try:
            import redis
        except ImportError:
            raise StoreError(f"--store {url} needs the redis client: pip install "
                             f"'cogserve[redis]' {WAY_OUT}") from None
        self.description = url
        self.prefix = f"cogserve:{namespace}:"
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        try:
            self.client: redis.Redis = redis.Redis.from_url(
                url, socket_timeout=5.0, socket_connect_timeout=5.0, health_check_interval=0)
            self._scripts = {name: self.client.register_script(source) for name, source in
                             (("save", _SAVE), ("finish", _FINISH), ("evict", _EVICT),
                              ("hook", _HOOK), ("done", _DONE), ("drop", _DROP),
                              ("claim", _CLAIM))}
            version = self.client.get(self.prefix + "version")
            if version is not None and int(version) > LAYOUT:
                raise StoreError(f"the prediction store at {url} was written by a newer "
                                 f"cogserve (layout {int(version)}; this one reads up to "
                                 f"{LAYOUT}) {WAY_OUT}")
            self.client.set(self.prefix + "version", LAYOUT, nx=True)
        except ValueError as exc:  # a URL redis-py cannot read
            raise StoreError(f"--store {url}: {exc} {WAY_OUT}") from None
        except self._errors as exc:
            raise StoreError(f"the prediction store at {url} cannot be reached: {exc} "
                             f"{WAY_OUT}") from None

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except self._errors as exc:
            raise StoreError(f"{what} the prediction store at {self.description} failed: "
                             f"{exc}") from exc

    # ------------------------------------------------------------ writing

    def write(self, batch: Sequence[interface.Write], bounds: interface.Bounds, owner: str) -> None:
        p = self.prefix
        pipe = self.client.pipeline(transaction=True)
        scripts = self._scripts
        saves: list[Any] = [p, owner]
        now = time.time()
        for item in batch:
            if isinstance(item, interface.Record):
                finished = item.stage is interface.Stage.FINISHED
                when = (now if item.finished is None else item.finished) if finished else None
                saves += [item.id, item.kind, item.status, item.stage, repr(item.created),
                          "" if when is None else repr(when), item.body, item.request or b""]
                continue
            if len(saves) > 2:  # the records before this write go first, in order
                scripts["save"](args=saves, client=pipe)
                saves = [p, owner]
            if isinstance(item, interface.FinishedBatch):
                rows = item.rows
                scripts["finish"](args=[p, owner, repr(now), orjson.dumps(
                    [(row[0], row[1], row[2], row[3], len(row[4])) for row in rows]),
                    b"".join([row[4] for row in rows])], client=pipe)
            elif isinstance(item, interface.Hook):
                packed = orjson.dumps([item.delivery, item.url, item.headers.decode(),
                                       item.body.decode()])
                scripts["hook"](args=[p, item.id, item.seq, packed, owner], client=pipe)
            elif isinstance(item, interface.Dropped):
                scripts["drop"](args=[p, item.id, repr(now)], client=pipe)
            else:
                scripts["done"](args=[p, item.id, item.seq], client=pipe)
        if len(saves) > 2:
            scripts["save"](args=saves, client=pipe)
        scripts["evict"](args=[p, bounds.count, bounds.bytes,
                               -1 if not bounds.age else time.time() - bounds.age, EVICTED_IDS],
                         client=pipe)
        self._call("writing", pipe.execute)

    # ------------------------------------------------------------ reading

    def get(self, prediction_id: str) -> interface.Record | None:
        values = self._call("reading", self.client.hmget, self.prefix + "r:" + prediction_id,
                            list(_FIELDS))
        return _record(prediction_id, values)

    def was_evicted(self, prediction_id: str) -> bool:
        return self._call("reading", self.client.zscore, self.prefix + "ev",
                          prediction_id) is not None

    def page(self, kind: str, status: str | None, limit: int, cursor: str | None) -> interface.Page:
        key = self.prefix + "s:" + kind + (f":{status}" if status is not None else "")
        top: float | str = "+inf"
        after = None
        if cursor is not None:
            top, after = interface.parse_cursor(cursor)
        # newest first: score (created) down, then id down, as Redis orders equal scores
        found = self._call("reading", lambda: self.client.zrevrangebyscore(
            key, top, "-inf", start=0, num=limit + 65, withscores=True))
        ids = [(member.decode(), score) for member, score in found
               if after is None or score < float(top) or member.decode() < after][:limit + 1]
        pipe = self.client.pipeline(transaction=False)
        for prediction_id, _ in ids[:limit]:
            pipe.hget(self.prefix + "r:" + prediction_id, "body")
        bodies = [body for body in self._call("reading", pipe.execute) if body is not None]
        following = interface.cursor_of(ids[limit - 1][1], ids[limit - 1][0]) if len(ids) > limit \
            else None
        return interface.Page(bodies, following)

    def claim(self, owner: str) -> interface.Claimed:
        p = self.prefix
        record_ids, hook_ids = self._call("claiming", lambda: self._scripts["claim"](
            args=[p, owner]))
        pipe = self.client.pipeline(transaction=False)
        for raw in record_ids:
            pipe.hmget(p + "r:" + raw.decode(), list(_FIELDS))
        for raw in hook_ids:
            pipe.hgetall(p + "h:" + raw.decode())
        answers = self._call("claiming", pipe.execute) if record_ids or hook_ids else []
        claimed = interface.Claimed()
        for raw, values in zip(record_ids, answers, strict=False):
            record = _record(raw.decode(), values)
            if record is not None:
                claimed.records.append(record)
        claimed.records.sort(key=lambda r: r.created)
        for raw, entries in zip(hook_ids, answers[len(record_ids):], strict=True):
            for seq, packed in sorted(entries.items(), key=lambda kv: int(kv[0])):
                delivery, url, headers, body = orjson.loads(packed)
                claimed.hooks.append(interface.Hook(raw.decode(), int(seq), delivery, url,
                                                    body.encode(), headers.encode()))
        return claimed

    def heartbeat(self, owner: str, lease: float) -> None:
        self._call("renewing the lease in", lambda: self.client.set(
            self.prefix + "lease:" + owner, b"1", px=max(1, int(lease * 1000))))

    def close(self, owner: str) -> None:
        try:
            self.client.delete(self.prefix + "lease:" + owner)
        except self._errors:
            pass
        self.client.close()


def _record(prediction_id: str, values: list[bytes | None]) -> interface.Record | None:
    kind, status, stage, created, body, finished, request = values
    if kind is None or status is None or stage is None or created is None or body is None:
        return None
    return interface.Record(prediction_id, kind.decode(), status.decode(),
                            interface.Stage(stage.decode()), float(created), body,
                            float(finished) if finished else None, request)

