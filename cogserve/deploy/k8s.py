"""`cogserve k8s`: Kubernetes manifests (Deployment, Service, HPA) or KServe ones
(a ServingRuntime for the model's image and an InferenceService that uses it).

The manifests encode what cogserve's states mean to the platform:

- liveness is `/v2/health/live`: it fails only once the process can never serve again
  (DEFUNCT, SETUP_FAILED) or is gone, so a long setup() or a busy model is never killed;
- readiness is `/v2/health/ready`: it fails while the model is not READY (starting,
  failed, shutting down) or its user healthcheck fails; BUSY stays ready, because the
  probe is far too slow to follow slots and the platform's concurrency limit queues instead;
- KServe's `containerConcurrency` equals the model's slots, so Knative's queue-proxy
  holds request number slots+1 instead of cogserve answering 409;
- the termination grace period covers the preStop pause, the drain and a margin (on
  KServe, Knative's revision timeout is that grace period);
- `/dev/shm` is a memory-backed volume: a container's own is 64 MiB, too small for the
  data URL inputs cogserve writes there (`COGSERVE_MEMORY_DIR`) under load and for
  PyTorch's worker processes; what is written there counts against the memory limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from cogserve.deploy import APP_UID, DEFAULT_PORT, KSERVE_PORT, LIVE_PATH, READY_PATH
from cogserve.exceptions import DefinitionError
from cogserve.model.config import ModelConfig

DEFAULT_DRAIN_SECONDS = 30  # the default drain deadline the pod is given to finish work
PRESTOP_SECONDS = 5  # endpoints are removed asynchronously: keep serving that long first
GRACE_MARGIN_SECONDS = 10  # worker stop and process exit after the drain
MODEL_FORMAT = "cog"  # the KServe model format the runtime declares
GPU_RESOURCE = "nvidia.com/gpu"
KNATIVE_TIMEOUT_SECONDS = 300  # Knative's default request timeout
SHM_VOLUME = {"name": "shm", "emptyDir": {"medium": "Memory"}}  # mounted at /dev/shm


@dataclass
class Options:
    image: str
    name: str | None = None
    kserve: bool = False
    slots: int | None = None  # default: cog.yaml concurrency.max, else 1
    min_replicas: int = 1
    max_replicas: int = 3
    target_cpu: int = 70  # HPA: average CPU utilisation, percent of the request
    cpu: str = "1"
    memory: str = "2Gi"
    gpu: int = 0
    drain_seconds: int = DEFAULT_DRAIN_SECONDS
    healthcheck_timeout: int = 5  # COGSERVE_HEALTHCHECK_TIMEOUT: readiness waits that long


_DNS_INVALID = re.compile(r"[^a-z0-9-]+")


def resource_name(raw: str) -> str:
    """A DNS-1035 label (Services need one): lowercase, digits and '-', a letter first."""
    name = _DNS_INVALID.sub("-", raw.lower()).strip("-")
    if not name or not name[0].isalpha():
        name = f"model-{name}".rstrip("-")
    return name[:53].rstrip("-")  # room for suffixes such as "-cogserve"


def _check(options: Options) -> None:
    if options.min_replicas < 1 or options.max_replicas < options.min_replicas:
        raise DefinitionError("need 1 <= --min-replicas <= --max-replicas")
    if options.slots is not None and options.slots < 1:
        raise DefinitionError("--slots must be at least 1")
    if options.gpu < 0 or options.drain_seconds < 0 or not 1 <= options.target_cpu <= 100:
        raise DefinitionError("--gpu and --drain-seconds must be >= 0, --target-cpu 1..100")


def grace_seconds(options: Options) -> int:
    return PRESTOP_SECONDS + options.drain_seconds + GRACE_MARGIN_SECONDS


def _probes(port: int | str, options: Options, *, startup: bool) -> dict[str, Any]:
    def get(path: str) -> dict[str, Any]:
        return {"path": path, "port": port}

    probes: dict[str, Any] = {
        "livenessProbe": {"httpGet": get(LIVE_PATH), "periodSeconds": 10,
                          "timeoutSeconds": 5, "failureThreshold": 3},
        # ready runs the model's own healthcheck, which may take COGSERVE_HEALTHCHECK_TIMEOUT
        "readinessProbe": {"httpGet": get(READY_PATH), "periodSeconds": 5,
                           "timeoutSeconds": options.healthcheck_timeout + 1,
                           "failureThreshold": 2},
    }
    if startup:  # the HTTP server listens within seconds; setup() may then take long
        probes["startupProbe"] = {"httpGet": get(LIVE_PATH), "periodSeconds": 2,
                                  "failureThreshold": 60}
    return probes


def _resources(options: Options) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": options.cpu, "memory": options.memory},
                                 "limits": {"memory": options.memory}}
    if options.gpu:
        resources["requests"][GPU_RESOURCE] = str(options.gpu)
        resources["limits"][GPU_RESOURCE] = str(options.gpu)
    return resources


def _container(name: str, options: Options, port: int, slots: int | None,
               kserve: bool) -> dict[str, Any]:
    env = [{"name": "PORT", "value": str(port)}]
    if slots is not None:  # an explicit --slots: the server serves exactly that many
        env.append({"name": "COG_MAX_CONCURRENCY", "value": str(slots)})
    env.append({"name": "COGSERVE_HEALTHCHECK_TIMEOUT", "value": str(options.healthcheck_timeout)})
    container: dict[str, Any] = {
        "name": name,
        "image": options.image,
        "env": env,
        "ports": ([{"containerPort": port, "protocol": "TCP"}] if kserve
                  else [{"name": "http", "containerPort": port, "protocol": "TCP"}]),
        "resources": _resources(options),
        **_probes(port if kserve else "http", options, startup=not kserve),
        "securityContext": {"runAsNonRoot": True, "runAsUser": APP_UID,
                            "allowPrivilegeEscalation": False},
        "volumeMounts": [{"name": SHM_VOLUME["name"], "mountPath": "/dev/shm"}],
    }
    if not kserve:  # Knative keeps a terminating pod out of rotation itself
        container["lifecycle"] = {"preStop": {"exec": {"command": [
            "sleep", str(PRESTOP_SECONDS)]}}}
    return container


def manifests(config: ModelConfig, options: Options) -> list[dict[str, Any]]:
    _check(options)
    name = resource_name(options.name or config.default_name())
    slots = options.slots or config.concurrency or 1
    explicit = options.slots
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "model",
              "app.kubernetes.io/managed-by": "cogserve"}
    if options.kserve:
        return _kserve(name, labels, options, slots, explicit)
    selector = {"app.kubernetes.io/name": name}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": options.min_replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": grace_seconds(options),
                    "containers": [_container("model", options, DEFAULT_PORT, explicit,
                                              kserve=False)],
                    "volumes": [SHM_VOLUME],
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {"selector": selector,
                 "ports": [{"name": "http", "port": 80, "targetPort": "http",
                            "protocol": "TCP"}]},
    }
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": options.min_replicas,
            "maxReplicas": options.max_replicas,
            "metrics": [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization",
                                          "averageUtilization": options.target_cpu}}}],
        },
    }
    return [deployment, service, hpa]


def _kserve(name: str, labels: dict[str, str], options: Options, slots: int,
            explicit: int | None) -> list[dict[str, Any]]:
    runtime_name = f"{name}-cogserve"
    container = _container("kserve-container", options, KSERVE_PORT, explicit, kserve=True)
    # the V2 model name is the InferenceService's name: KServe fills {{.Name}} in
    container["args"] = ["--model-name={{.Name}}"]
    runtime = {
        "apiVersion": "serving.kserve.io/v1alpha1",
        "kind": "ServingRuntime",
        "metadata": {"name": runtime_name, "labels": labels},
        "spec": {
            "supportedModelFormats": [{"name": MODEL_FORMAT, "version": "1",
                                       "autoSelect": False}],
            "protocolVersions": ["v2"],
            "multiModel": False,
            "containers": [container],
            "volumes": [SHM_VOLUME],
        },
    }
    inference_service = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "predictor": {
                "minReplicas": options.min_replicas,
                "maxReplicas": options.max_replicas,
                # Knative's queue-proxy lets at most `slots` requests into a pod at once
                "containerConcurrency": slots,
                "scaleMetric": "concurrency",
                "scaleTarget": slots,
                # Knative gives a terminating pod its revision timeout as grace period (the
                # pod spec's own field is refused there), so the timeout must cover the drain
                "timeout": max(KNATIVE_TIMEOUT_SECONDS, grace_seconds(options)),
                "model": {
                    "modelFormat": {"name": MODEL_FORMAT, "version": "1"},
                    "runtime": runtime_name,
                    "protocolVersion": "v2",
                },
            },
        },
    }
    return [runtime, inference_service]


class _PlainDumper(yaml.SafeDumper):
    """No `&id001` anchors for repeated label maps: people read and patch these files."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(config: ModelConfig, options: Options) -> str:
    return yaml.dump_all(manifests(config, options), Dumper=_PlainDumper, sort_keys=False)
