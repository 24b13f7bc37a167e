"""The Ray Serve side: one replica = one cogserve runtime with its own worker, and the
request router that sends requests naming a prediction to the replica holding it.

Imported only inside Ray (the driver of `cogserve ray`, its proxy and its replicas).
"""

from __future__ import annotations

import os
import pickle
import random
from typing import TYPE_CHECKING, Any

from ray import serve
from ray.serve.request_router import PendingRequest, RequestRouter, RunningReplica

from cogserve.deploy.ray_forward import FORWARDED, Forwarder, Peers
from cogserve.deploy.ray_routing import ID_MARKERS, Homes, Ingress, prediction_id, replica_tag
from cogserve.wire.states import Health

if TYPE_CHECKING:
    from cogserve.runtime.service import Service

QUEUE_HEADROOM = 16  # requests a replica takes beyond its slots (cancels, GETs, queued)

ASGI = Any


def _request_path(pending: PendingRequest | None) -> str | None:
    """The HTTP path of a request from Ray's proxy (it sends the pickled ASGI scope), read
    only when the request may name an id: a path that does holds `ID_MARKERS`, so the
    pickle of most requests (POST /predictions, V2 infer) is never loaded here."""
    if pending is None or not pending.args or not isinstance(pending.args[0], bytes):
        return None
    if not any(marker in pending.args[0] for marker in ID_MARKERS):
        return None
    try:
        request = pickle.loads(pending.args[0])
    except Exception:  # noqa: BLE001 - not an HTTP request from the proxy
        return None
    scope = getattr(request, "asgi_scope", None)
    return scope.get("path") if isinstance(scope, dict) else None


class PredictionRouter(RequestRouter):  # type: ignore[misc]  # ray is untyped
    """Ray Serve request router: by prediction id where the path names one (see
    `ray_routing`), else the less loaded of two random replicas."""

    def initialize_state(self, **kwargs: Any) -> None:
        self._homes = Homes()

    async def choose_replicas(self, candidate_replicas: list[RunningReplica],
                              pending_request: PendingRequest | None = None
                              ) -> list[list[RunningReplica]]:
        path = _request_path(pending_request)
        ident = prediction_id(path) if path else None
        if ident is None:
            return [random.sample(candidate_replicas, min(2, len(candidate_replicas)))]
        by_id = {r.replica_id.unique_id: r for r in candidate_replicas}
        home = self._homes.home(ident, list(by_id))
        if home is None:
            return []
        self._homes.pin(ident, home)
        return [[by_id[home]]]


class _ReplicaApp:
    """cogserve's app as Ray runs it: the service is started by the replica's constructor
    (so Ray routes nothing to it before setup() is done), stopped after a drain. Under
    HAProxy (`forwarder` set) a request for a prediction held elsewhere is passed on."""

    def __init__(self, app: ASGI, service: Service, forwarder: Forwarder | None) -> None:
        self.app = app
        self.service = service
        self.forwarder = forwarder

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif not (self.forwarder is not None and scope["type"] == "http"
                  and await self._forwarded(self.forwarder, scope, receive, send)):
            await self.app(scope, receive, send)

    async def _forwarded(self, forwarder: Forwarder, scope: dict[str, Any], receive: Any,
                         send: Any) -> bool:
        ident = prediction_id(scope["path"])
        if (ident is None or self.service.holds(ident)
                or any(name == FORWARDED for name, _ in scope["headers"])):
            return False
        address = await forwarder.home(ident, creating=scope["method"] == "PUT")
        return address is not None and await forwarder.forward(address, ident, scope,
                                                               receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.service.begin_shutdown()
                await self.service.drain()
                await self.service.stop()
                if self.forwarder is not None:
                    await self.forwarder.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


class ReplicaFailed(RuntimeError):
    """Tells Ray this replica can no longer serve (it replaces it)."""


@serve.ingress()
class CogserveReplica:
    """One Ray Serve replica: a cogserve Service and its worker, behind cogserve's app."""

    async def __init__(self, directory: str, predictor: str | None,  # type: ignore[misc]
                       model_name: str | None, ingress: Ingress) -> None:  # Ray awaits it
        from cogserve import assembly
        from cogserve.model.config import load_config
        from cogserve.process.envvars import env_text
        from cogserve.runtime import settings as runtime_settings

        config = load_config(directory, predictor)
        settings = runtime_settings.for_model(config)  # with cog.yaml's packages (#18)
        settings.model_name = model_name
        context = serve.get_replica_context()
        me = context.replica_id.unique_id
        settings.id_prefix = replica_tag(me)
        # predictions beyond the slots wait in the replica's queue instead of 409: Ray sends
        # a replica at most slots + QUEUE_HEADROOM requests, so the queue never overflows
        settings.queue_size = settings.queue_size or QUEUE_HEADROOM
        # a replica has no port of its own, so no default store file: COGSERVE_STORE names
        # one (redis://...: shared by the replicas), else memory
        stored = env_text("COGSERVE_STORE")
        if stored:
            settings.store = runtime_settings.choose_store(stored, config.directory, 0)
        app, self.service, _ = assembly.build(config, settings)
        await self.service.start()
        await self.service.ready.wait()
        if self.service.status is not Health.READY:
            logs = self.service.setup.logs.strip().splitlines()
            await self.service.stop()
            raise ReplicaFailed(f"setup() failed: {logs[-1] if logs else 'worker exited'}")
        forwarder = Forwarder(Peers(context.app_name, me)) if ingress is Ingress.HAPROXY else None
        self._asgi = _ReplicaApp(app, self.service, forwarder)
        self.pid = os.getpid()

    def __serve_build_asgi_app__(self) -> ASGI:
        return self._asgi

    def check_health(self) -> None:
        """Ray calls this periodically: a dead worker (DEFUNCT) means a new replica."""
        if self.service.status in (Health.DEFUNCT, Health.SETUP_FAILED):
            raise ReplicaFailed(f"the model is {self.service.status}: "
                                f"{self.service.fatal_reason or 'setup failed'}")
