"""Which replica a request belongs to: the prediction id in its path decides.

A prediction lives in one replica (its worker, its webhooks, its SSE history), so a
request that names it (PUT /predictions/{id}, .../cancel, GET /predictions/{id}) must reach
that replica. The home of an id is, in order:

1. the replica it was first sent to by this router (pinned: stays put when replicas
   are added or removed);
2. the replica whose tag starts the id: a replica generates ids that begin with its
   4-character tag (`replica_tag`), so every proxy finds the home of a generated id
   without shared state;
3. otherwise (an id the client chose) rendezvous hashing over the live replicas: every
   proxy computes the same home while the set of replicas is unchanged.

Requests that name no id go to the less loaded of two random replicas (power of two).
Pure functions here; `ray_app` wires them into Ray Serve's request router, and
`ray_forward` applies them in the replicas when HAProxy is the ingress.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Iterable
from enum import StrEnum

TAG_LENGTH = 4
_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
_ID_IN_PATH = re.compile(r"^/(?:predictions|trainings)/([^/]+)")
# bytes every path that names an id contains (a cheap test before parsing a request)
ID_MARKERS = (b"/predictions/", b"/trainings/")
PIN_LIMIT = 100_000  # ids remembered per router; the oldest are forgotten first


class Ingress(StrEnum):
    """What takes the HTTP traffic in front of the replicas (`cogserve ray --ingress`)."""

    PROXY = "proxy"  # Ray Serve's HTTP proxy; `PredictionRouter` picks each replica
    HAPROXY = "haproxy"  # Ray's HAProxy to each replica's own server; `ray_forward` hops


def replica_tag(replica_unique_id: str) -> str:
    """4 base32 characters (20 bits) derived from a replica's unique id."""
    number = int.from_bytes(hashlib.sha256(replica_unique_id.encode()).digest()[:4], "big")
    return "".join(_BASE32[(number >> (5 * i)) & 31] for i in range(TAG_LENGTH))


def prediction_id(path: str) -> str | None:
    match = _ID_IN_PATH.match(path)
    return match.group(1) if match else None


def rendezvous(ident: str, replicas: Iterable[str]) -> str | None:
    """The replica (unique id) with the highest hash of (id, replica): stable per set."""
    return max(replicas, key=lambda r: hashlib.sha256(f"{ident}\0{r}".encode()).digest(),
               default=None)


class Homes:
    """The home of each prediction id, as the module docstring says."""

    def __init__(self) -> None:
        self._pins: OrderedDict[str, str] = OrderedDict()
        self._tags: dict[str, str] = {}  # replica unique id -> tag

    def home(self, ident: str, replicas: list[str]) -> str | None:
        pinned = self._pins.get(ident)
        if pinned in replicas:
            return pinned
        for replica in replicas:
            tag = self._tags.get(replica) or self._tags.setdefault(replica,
                                                                    replica_tag(replica))
            if ident.startswith(tag):
                return replica
        return rendezvous(ident, replicas)

    def pin(self, ident: str, replica: str) -> None:
        self._pins[ident] = replica
        self._pins.move_to_end(ident)
        while len(self._pins) > PIN_LIMIT:
            self._pins.popitem(last=False)
