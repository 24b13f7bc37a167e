"""Where a request naming a prediction id is served under `cogserve ray`: the rules of
ray_routing (tag, pin, rendezvous) and the HAProxy-ingress forwarder's use of them."""

from __future__ import annotations

import asyncio
import json
import socket

from cogserve.deploy.ray_forward import Forwarder, Peers
from cogserve.deploy.ray_routing import Homes, prediction_id, rendezvous, replica_tag

from .helpers import Response

REPLICAS = ["replica-a", "replica-b", "replica-c"]


def test_an_id_names_its_home_by_the_tag_it_starts_with():
    homes = Homes()
    for replica in REPLICAS:
        assert homes.home(replica_tag(replica) + "rest-of-id", REPLICAS) == replica


def test_a_client_chosen_id_has_one_home_per_replica_set_and_a_pin_keeps_it():
    homes = Homes()
    chosen = homes.home("my-id", REPLICAS)
    assert chosen == rendezvous("my-id", reversed(REPLICAS))  # order does not matter
    homes.pin("my-id", chosen)
    grown = [*REPLICAS, *(f"replica-{n}" for n in range(20))]
    assert homes.home("my-id", grown) == chosen  # a new replica does not move it
    others = [r for r in REPLICAS if r != chosen]
    assert homes.home("my-id", others) in others  # its replica gone: another one


def test_paths_that_name_an_id():
    assert prediction_id("/predictions/abc") == "abc"
    assert prediction_id("/trainings/abc/cancel") == "abc"
    assert prediction_id("/predictions") is None
    assert prediction_id("/v2/models/m/infer") is None


class _Peers(Peers):
    """The controller's list of replicas, given instead of asked for."""

    def __init__(self, me: str, addresses: dict[str, str]) -> None:
        super().__init__("app", me)
        self.listed = addresses
        self.fetches = 0

    async def _fetch(self) -> dict[str, str]:
        self.fetches += 1
        return dict(self.listed)


def test_the_forwarder_serves_its_own_ids_and_finds_the_address_of_others():
    addresses = {r: f"10.0.0.{n}:3000{n}" for n, r in enumerate(REPLICAS)}
    peers = _Peers("replica-a", addresses)
    forwarder = Forwarder(peers)

    async def scenario() -> None:
        assert await forwarder.home(replica_tag("replica-a") + "x") is None  # held here
        assert await forwarder.home(replica_tag("replica-c") + "x") == "10.0.0.2:30002"
        assert peers.fetches == 1  # the list is reused within REFRESH_SECONDS
        del peers.listed["replica-c"]  # replaced: a fresh list sends its ids elsewhere
        assert await forwarder.home(replica_tag("replica-c") + "y", fresh=True) in (
            None, "10.0.0.1:30001")
        assert peers.fetches == 2

    asyncio.run(scenario())


def test_a_replica_not_yet_listed_sends_ids_where_the_listed_ones_do():
    """Until the controller lists a new replica, the others do not count it: it must not
    keep a client-chosen id that they would send to one of them."""
    listed = {"replica-b": "127.0.0.1:30001", "replica-c": "127.0.0.1:30002"}
    newcomer = Forwarder(_Peers("replica-a", listed))
    for n in range(20):
        ident = f"client-chosen-{n}"
        assert asyncio.run(newcomer.home(ident)) == listed[rendezvous(ident, listed)]
    alone = Forwarder(_Peers("replica-a", {}))  # nobody listed yet: it serves
    assert asyncio.run(alone.home("any-client-chosen-id")) is None


def test_a_new_id_is_kept_only_on_the_controllers_current_list():
    """A PUT that would create an id here asks the controller again first: a replica
    listed since this one last looked may be its home (and keep it too)."""
    peers = _Peers("replica-a", {"replica-a": "127.0.0.1:30000"})
    forwarder = Forwarder(peers)
    ident = next(f"id-{n}" for n in range(100)
                 if rendezvous(f"id-{n}", ["replica-a", "replica-b"]) == "replica-b")

    async def scenario() -> None:
        assert await forwarder.home(ident) is None  # the list it has: only itself
        peers.listed["replica-b"] = "127.0.0.1:30001"  # listed meanwhile
        assert await forwarder.home(ident) is None  # a GET or cancel uses the cached list
        assert await forwarder.home(ident, creating=True) == "127.0.0.1:30001"
        assert peers.fetches == 2

    asyncio.run(scenario())


def test_a_home_that_cannot_be_reached_is_answered_503_not_an_error():
    """A replica being replaced (its worker was killed) is still listed for a moment: a
    request forwarded to it gets 503, as a replica whose worker died answers."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        gone = f"127.0.0.1:{probe.getsockname()[1]}"
    peers = _Peers("replica-a", {"replica-a": "127.0.0.1:30000", "replica-b": gone})
    forwarder = Forwarder(peers)
    ident = replica_tag("replica-b") + "x"
    response = Response()

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def scenario() -> bool:
        address = await forwarder.home(ident)
        assert address == gone
        scope = {"type": "http", "method": "GET", "path": f"/predictions/{ident}",
                 "headers": []}
        try:
            return await forwarder.forward(address, ident, scope, receive, response.send)
        finally:
            await forwarder.close()

    assert asyncio.run(scenario())
    assert response.status == 503 and response.headers[b"retry-after"] == b"1"
    assert json.loads(response.body)["error"].startswith(
        f"the replica that holds {ident!r} cannot be reached (ConnectError")
