"""The optional protections: a bearer token, a disabled /shutdown, and the URL policy
that keeps file inputs, webhooks and uploads off loopback/private/link-local addresses.
By default none is on (Cog's behaviour; the rest of the suite runs that way)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from filehub import FileServer
from filehub import Receiver as Uploads
from harness import MODELS, Server

from cogserve.process.netpolicy import BlockedAddress, URLPolicy, create_connection, is_public

HELLO = MODELS.parent.parent / "examples" / "hello-world"
TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOCKED = {"COGSERVE_AUTH_TOKEN": TOKEN, "COGSERVE_DISABLE_SHUTDOWN_ROUTE": "1"}


@pytest.fixture(scope="module")
def locked() -> Iterator[Server]:
    with Server(HELLO, env=LOCKED) as server:
        yield server


@pytest.mark.parametrize("method,path", [
    ("POST", "/predictions"), ("PUT", "/predictions/x"), ("POST", "/predictions/x/cancel"),
    ("GET", "/openapi.json"), ("GET", "/"), ("POST", "/shutdown"),
    ("GET", "/v2/models/hello-world"), ("GET", "/nowhere"),
])
@pytest.mark.parametrize("auth", [None, "Bearer wrong", f"bearer {TOKEN}", TOKEN])
def test_without_the_token_every_route_but_health_is_401(locked, method, path, auth):
    headers = {"Authorization": auth} if auth else {}
    r = locked.client.request(method, path, headers=headers, json={"input": {}})
    assert r.status_code == 401, r.text
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in r.json()["error"]


def test_health_is_open_and_the_token_opens_the_rest(locked):
    assert locked.client.get("/health-check").json()["status"] == "READY"
    assert locked.client.get("/v2/health/ready").status_code == 200
    r = locked.client.post("/predictions", headers=AUTH, json={"input": {"name": "t"}})
    assert r.status_code == 200 and r.json()["output"] == "hello t"
    assert locked.client.get("/openapi.json", headers=AUTH).status_code == 200


def test_shutdown_can_be_disabled(locked):
    r = locked.client.post("/shutdown", headers=AUTH)
    assert r.status_code == 403 and "disabled" in r.json()["error"]
    assert locked.health()["status"] == "READY"
    assert locked.process.poll() is None


# ---------------------------------------------------------------- URL policy

def test_address_classification():
    for address in ("127.0.0.1", "10.1.2.3", "192.168.0.1", "172.16.0.1", "169.254.169.254",
                    "100.64.0.1", "0.0.0.0", "::1", "fe80::1", "fd00::1", "::ffff:127.0.0.1",
                    "224.0.0.1"):
        assert not is_public(address), address
    for address in ("8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"):
        assert is_public(address), address


def test_a_name_is_checked_after_resolution():
    with pytest.raises(BlockedAddress, match="localhost .*not a public address"):
        create_connection(("localhost", 9), 1, policy=URLPolicy.PUBLIC)
    with socket.socket() as listener:  # the default policy connects, as Cog does
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        create_connection(listener.getsockname(), 1, policy=URLPolicy.ANY).close()


@pytest.fixture(scope="module")
def hub() -> Iterator[tuple[FileServer, Uploads]]:
    files, uploads = FileServer(), Uploads()
    files.files["/a.txt"] = (b"internal", "text/plain", None)
    yield files, uploads
    files.close()
    uploads.close()


def test_public_policy_refuses_internal_file_inputs(serve, hub):
    files, _ = hub
    server = serve("files_in", env={"COGSERVE_URL_POLICY": "public"})
    for url in (files.url + "/a.txt", files.url.replace("127.0.0.1", "localhost") + "/a.txt"):
        body = server.client.post("/predictions", json={"input": {"p": url}}).json()
        assert body["status"] == "failed", body
        assert "not a public address" in body["error"] and "COGSERVE_URL_POLICY" in body["error"]


def test_public_policy_refuses_internal_webhooks_and_uploads(serve, receiver, hub):
    _, uploads = hub
    server = serve("files_out", "--upload-url", uploads.url + "/up",
                   env={"COGSERVE_URL_POLICY": "public"})
    hook = receiver()
    r = server.client.post("/predictions", json={"input": {}, "webhook": hook.url})
    body = r.json()
    assert body["status"] == "failed" and "not a public address" in body["error"], body
    assert uploads.uploads == []
    # the refused webhook is given up at once (not retried), and said so in the log
    server_log = _wait_for_log(server, f"webhook {hook.url} not sent")
    assert f"webhook {hook.url} not sent: " in server_log and "failed after" not in server_log
    assert hook.delivered() == []


def test_an_unknown_policy_is_refused_at_start(serve):
    with pytest.raises(AssertionError, match="COGSERVE_URL_POLICY='open'"):
        serve(HELLO, env={"COGSERVE_URL_POLICY": "open"}, timeout=15)


def _wait_for_log(server: Server, phrase: str) -> str:
    deadline = time.monotonic() + 10
    while phrase not in server.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    return server.output()
