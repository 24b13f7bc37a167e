"""`cogserve k8s`: the manifests validate against the official schemas, offline, and the
probes they name answer as the manifests assume on a real server."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

import kserve_schema
import kubernetes_validate
import pytest
import yaml
from harness import MODELS, Server

K8S_VERSION = kubernetes_validate.latest_version()


def k8s(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cogserve.cli", "k8s", *args],
                          capture_output=True, text=True, timeout=60)


def documents(*args: str) -> list[dict[str, Any]]:
    result = k8s(*args)
    assert result.returncode == 0, result.stderr
    return list(yaml.safe_load_all(result.stdout))


def validate_core(doc: dict[str, Any]) -> None:
    # strict: a field the schema does not know is an error, not silently dropped
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_deployment_service_hpa_validate_and_say_what_cogserve_needs():
    docs = documents(str(MODELS / "async_slots"), "--image", "registry.example/slots:1",
                     "--cpu", "500m", "--memory", "1Gi", "--gpu", "1", "--drain-seconds", "60",
                     "--min-replicas", "2", "--max-replicas", "5")
    assert [d["kind"] for d in docs] == ["Deployment", "Service", "HorizontalPodAutoscaler"]
    for doc in docs:
        validate_core(doc)
    deployment, service, hpa = docs
    pod = deployment["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 5 + 60 + 10  # preStop + drain + margin
    (container,) = pod["containers"]
    assert container["image"] == "registry.example/slots:1"
    assert container["livenessProbe"]["httpGet"] == {"path": "/v2/health/live", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": "http"}
    assert container["startupProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert container["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"},
        "limits": {"memory": "1Gi", "nvidia.com/gpu": "1"}}
    assert container["securityContext"]["runAsNonRoot"] is True
    assert container["ports"] == [{"name": "http", "containerPort": 5000, "protocol": "TCP"}]
    # data URL inputs go to /dev/shm: memory-backed, not the container's own 64 MiB
    (volume,) = pod["volumes"]
    assert volume["emptyDir"] == {"medium": "Memory"}
    assert container["volumeMounts"] == [{"name": volume["name"], "mountPath": "/dev/shm"}]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 5)
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]


def test_kserve_runtime_and_inference_service_validate_against_kserves_crd_schemas():
    docs = documents(str(MODELS / "async_slots"), "--image", "registry.example/slots:1",
                     "--kserve", "--name", "Slots_Model")
    runtime, isvc = docs
    assert kserve_schema.errors(runtime) == []
    assert kserve_schema.errors(isvc) == []
    # the container also passes the Kubernetes schema itself, inside a Pod
    (container,) = runtime["spec"]["containers"]
    validate_core({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": [container], "volumes": runtime["spec"]["volumes"]}})
    assert isvc["metadata"]["name"] == "slots-model"
    predictor = isvc["spec"]["predictor"]
    assert predictor["containerConcurrency"] == 4  # cog.yaml concurrency.max
    assert predictor["model"]["runtime"] == runtime["metadata"]["name"]
    assert predictor["model"]["protocolVersion"] == "v2"
    assert predictor["model"]["modelFormat"]["name"] in [
        f["name"] for f in runtime["spec"]["supportedModelFormats"]]
    assert predictor["timeout"] >= 5 + 30 + 10
    assert {"name": "PORT", "value": "8080"} in container["env"]
    assert container["args"] == ["--model-name={{.Name}}"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": 8080}
    (volume,) = runtime["spec"]["volumes"]
    assert volume["emptyDir"] == {"medium": "Memory"}
    assert container["volumeMounts"] == [{"name": volume["name"], "mountPath": "/dev/shm"}]


def test_slots_flag_sets_the_servers_slots_and_the_concurrency_limit():
    runtime, isvc = documents(str(MODELS / "sleepy"), "--image", "x:1", "--kserve",
                              "--slots", "3")
    assert isvc["spec"]["predictor"]["containerConcurrency"] == 3
    env = runtime["spec"]["containers"][0]["env"]
    assert {"name": "COG_MAX_CONCURRENCY", "value": "3"} in env


def test_the_validators_catch_mistakes():
    """Guards the two checks above: a manifest with an error must not pass them."""
    runtime, isvc = documents(str(MODELS / "sleepy"), "--image", "x:1", "--kserve")
    isvc["spec"]["predictor"]["containerConcurency"] = 1  # misspelt
    runtime["spec"]["containers"][0]["readinessProbe"]["periodSeconds"] = "often"
    del runtime["spec"]["containers"][0]["name"]
    found = kserve_schema.errors(isvc)
    assert any("containerConcurency" in e and "not allowed" in e for e in found), found
    found = kserve_schema.errors(runtime)
    assert any("periodSeconds: 'often' is not of type 'integer'" in e for e in found), found
    assert any("'name' is a required property" in e for e in found), found
    deployment = documents(str(MODELS / "sleepy"), "--image", "x:1")[0]
    deployment["spec"]["template"]["spec"]["terminationGracePeriod"] = 3
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_core(deployment)


def test_bad_flags_are_clear_errors():
    result = k8s(str(MODELS / "sleepy"), "--image", "x:1", "--min-replicas", "4",
                 "--max-replicas", "2")
    assert result.returncode == 1
    assert "error: need 1 <= --min-replicas <= --max-replicas" in result.stderr
    result = k8s(str(MODELS / "sleepy"))
    assert result.returncode == 2 and "--image" in result.stderr


def test_probe_paths_answer_as_the_manifests_assume():
    """live stays 200 while busy and draining; ready is 200 while READY or BUSY, then 503
    once SIGTERM starts the drain (the pod leaves the Service's endpoints)."""
    with Server("sleepy") as server:
        c = server.client
        assert c.get("/v2/health/live").status_code == 200
        assert c.get("/v2/health/ready").status_code == 200
        r = c.post("/predictions", json={"input": {"sleep": 30}},
                   headers={"Prefer": "respond-async"})  # holds the only slot
        assert r.status_code == 202
        server.wait_for("BUSY")
        assert c.get("/v2/health/live").status_code == 200
        assert c.get("/v2/health/ready").status_code == 200
        server.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while c.get("/v2/health/ready").status_code != 503:
            assert time.monotonic() < deadline, "still ready after SIGTERM"
            time.sleep(0.02)
        assert c.get("/v2/health/live").status_code == 200  # alive while it drains
