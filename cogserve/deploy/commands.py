"""The `cogserve dockerfile | k8s | ray` subcommands: flags here, work in their modules."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable

from cogserve.deploy import DEFAULT_PORT
from cogserve.deploy.ray_routing import Ingress
from cogserve.model.config import load_config
from cogserve.process import flag_types
from cogserve.process.envvars import env_float


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]
             ) -> dict[str, Callable[[argparse.Namespace], None]]:
    """Add the subcommands; returns each command's runner, keyed by name."""
    from cogserve.deploy import dockerfile, k8s

    p = sub.add_parser("dockerfile", help="write a Dockerfile and .dockerignore for the model")
    p.add_argument("directory", nargs="?", default=".")
    p.add_argument("--cogserve-requirement", default=dockerfile.Options.cogserve_requirement,
                   help="how the image installs cogserve (a pip requirement); the "
                        "COGSERVE_REQUIREMENT build argument overrides it")
    p.add_argument("--port", type=flag_types.port(1), default=DEFAULT_PORT,
                   help="the image's default PORT (KServe's manifests set 8080)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")

    p = sub.add_parser("k8s", help="print Kubernetes (or KServe) manifests for the model")
    p.add_argument("directory", nargs="?", default=".")
    p.add_argument("--image", required=True, help="the image `cogserve dockerfile` built")
    p.add_argument("--kserve", action="store_true",
                   help="a KServe ServingRuntime and InferenceService instead")
    p.add_argument("--name", default=None, help="resource name (default: the model's name)")
    p.add_argument("--slots", type=int, default=None,
                   help="predictions a pod runs at once (default: cog.yaml concurrency.max, "
                        "else 1); KServe's containerConcurrency")
    p.add_argument("--min-replicas", type=int, default=1)
    p.add_argument("--max-replicas", type=int, default=3)
    p.add_argument("--target-cpu", type=int, default=70, help="HPA CPU utilisation, percent")
    p.add_argument("--cpu", default="1", help="CPU request")
    p.add_argument("--memory", default="2Gi", help="memory request and limit")
    p.add_argument("--gpu", type=int, default=0, help="nvidia.com/gpu per pod")
    p.add_argument("--drain-seconds", type=int, default=k8s.DEFAULT_DRAIN_SECONDS,
                   help="time in-flight predictions get after SIGTERM (sets the grace period)")
    p.add_argument("--healthcheck-timeout", type=int, default=None,
                   help="seconds readiness waits (default: COGSERVE_HEALTHCHECK_TIMEOUT, "
                        "else 5)")

    p = sub.add_parser("ray", help="serve the model on Ray Serve (pip install cogserve[ray])")
    p.add_argument("directory", nargs="?", default=".")
    p.add_argument("--replicas", type=int, default=1,
                   help="replicas, each a cogserve runtime with its own worker")
    p.add_argument("-p", "--port", type=flag_types.port(1), default=None,
                   help=f"default: PORT, else {DEFAULT_PORT}")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--address", default=None,
                   help="a running Ray cluster (default: RAY_ADDRESS, else start a local "
                        "one)")
    p.add_argument("--autoscaling", default=None, metavar="JSON",
                   help="Ray Serve autoscaling_config, e.g. "
                        "'{\"min_replicas\": 1, \"max_replicas\": 4}' (replaces --replicas)")
    p.add_argument("--num-cpus", type=float, default=1.0, help="CPUs Ray reserves per replica")
    p.add_argument("--num-gpus", type=float, default=0.0, help="GPUs Ray reserves per replica")
    p.add_argument("--predictor", default=None, help="FILE.py:NAME, overrides cog.yaml")
    p.add_argument("--model-name", default=None, help="the model's name in the V2 API")
    p.add_argument("--health-check-period", type=float, default=2.0,
                   help="seconds between Ray's checks of each replica (a DEFUNCT one is "
                        "replaced)")
    p.add_argument("--ingress", choices=[i.value for i in Ingress], default=Ingress.PROXY.value,
                   help="what takes the HTTP traffic: Ray Serve's proxy (default) or Ray's "
                        "HAProxy straight to each replica (experimental in Ray; far less CPU "
                        "per request)")
    return {"dockerfile": _dockerfile, "k8s": _k8s, "ray": _ray}


def _dockerfile(args: argparse.Namespace) -> None:
    from cogserve.deploy import dockerfile

    config = load_config(args.directory)
    options = dockerfile.Options(cogserve_requirement=args.cogserve_requirement, port=args.port)
    for path in dockerfile.write(config, options, force=args.force):
        print(f"wrote {path}")


def _k8s(args: argparse.Namespace) -> None:
    from cogserve.deploy import k8s

    config = load_config(args.directory)
    options = k8s.Options(
        image=args.image, name=args.name, kserve=args.kserve, slots=args.slots,
        min_replicas=args.min_replicas, max_replicas=args.max_replicas,
        target_cpu=args.target_cpu, cpu=args.cpu, memory=args.memory, gpu=args.gpu,
        drain_seconds=args.drain_seconds, healthcheck_timeout=(
            args.healthcheck_timeout if args.healthcheck_timeout is not None
            else math.ceil(env_float("COGSERVE_HEALTHCHECK_TIMEOUT", 5.0, minimum=0) or 5)))
    sys.stdout.write(k8s.render(config, options))


def _ray(args: argparse.Namespace) -> None:
    from cogserve.deploy import ray

    ray.run(ray.Options.from_args(args))
