"""The GPU series of /metrics (observability/gpu.py), read through a stand-in for the
`pynvml` module: NVML is the process boundary (a C library over the driver), so the
stand-in answers as NVML does, errors included, and the real collector and Prometheus's
text format do the rest."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from cogserve.observability import gpu


class NVMLError(Exception):
    pass


@dataclass
class Process:
    pid: int
    usedGpuMemory: int | None  # noqa: N815 (NVML's field name)


@dataclass
class Sample:
    pid: int
    timeStamp: int  # noqa: N815
    smUtil: int  # noqa: N815


@dataclass
class Device:
    name: str
    util: int
    used: int
    total: int
    processes: list[Process]
    samples: list[Sample] | None  # None: the GPU does not report per-process samples


def fake_nvml(devices: list[Device], *, init_fails: bool = False) -> types.ModuleType:
    """A module with the pynvml functions the collector calls, answering from `devices`."""
    nvml = types.ModuleType("pynvml")
    calls: dict[str, int] = {"shutdown": 0}

    def init() -> None:
        if init_fails:
            raise NVMLError("NVML Shared Library Not Found")

    def process_utilization(handle: Device, since: int) -> list[Sample]:
        if handle.samples is None:
            raise NVMLError("Not Supported")
        newer = [s for s in handle.samples if s.timeStamp > since]
        if not newer:
            raise NVMLError("Not Found")
        return newer

    def shutdown() -> None:
        calls["shutdown"] += 1

    names: dict[str, Any] = {
        "NVMLError": NVMLError,
        "nvmlInit": init,
        "nvmlShutdown": shutdown,
        "nvmlDeviceGetCount": lambda: len(devices),
        "nvmlDeviceGetHandleByIndex": lambda i: devices[i],
        "nvmlDeviceGetName": lambda d: d.name.encode(),  # older pynvml: bytes
        "nvmlDeviceGetUUID": lambda d: f"GPU-{d.name}",
        "nvmlDeviceGetUtilizationRates": lambda d: types.SimpleNamespace(gpu=d.util, memory=0),
        "nvmlDeviceGetMemoryInfo": lambda d: types.SimpleNamespace(
            used=d.used, total=d.total, free=d.total - d.used),
        "nvmlDeviceGetComputeRunningProcesses": lambda d: list(d.processes),
        "nvmlDeviceGetProcessUtilization": process_utilization,
        "calls": calls,
    }
    for key, value in names.items():
        setattr(nvml, key, value)
    return nvml


def scrape(collector: gpu.GpuCollector) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def two_gpus() -> list[Device]:
    return [
        Device("H200", 87, 30 << 30, 141 << 30,
               [Process(4001, 9 << 30), Process(4002, 7 << 30), Process(999, 1 << 30)],
               [Sample(4001, 10, 60), Sample(4001, 20, 80), Sample(4002, 15, 30)]),
        Device("H200", 0, 1 << 30, 141 << 30, [Process(4003, None)], None),
    ]


def test_per_gpu_and_per_worker_series() -> None:
    collector = gpu.open_nvml(fake_nvml(two_gpus()))
    assert collector is not None
    collector.started(0, 4001)
    collector.started(1, 4002)
    collector.started(2, 4003)
    got = scrape(collector)
    assert got[("cogserve_gpu_utilization_ratio", (("gpu", "0"),))] == pytest.approx(0.87)
    assert got[("cogserve_gpu_utilization_ratio", (("gpu", "1"),))] == 0.0
    assert got[("cogserve_gpu_memory_used_bytes", (("gpu", "0"),))] == 30 << 30
    assert got[("cogserve_gpu_memory_total_bytes", (("gpu", "1"),))] == 141 << 30
    assert got[("cogserve_gpu_info", (("gpu", "0"), ("name", "H200"),
                                      ("uuid", "GPU-H200")))] == 1.0
    memory = {labels: v for (name, labels), v in got.items()
              if name == "cogserve_worker_gpu_memory_bytes"}
    # pid 999 is not a worker; worker 2's memory is withheld by the driver: no series
    assert memory == {(("gpu", "0"), ("worker", "0")): 9 << 30,
                      (("gpu", "0"), ("worker", "1")): 7 << 30}
    util = {labels: v for (name, labels), v in got.items()
            if name == "cogserve_worker_gpu_utilization_ratio"}
    assert util == {(("gpu", "0"), ("worker", "0")): pytest.approx(0.70),
                    (("gpu", "0"), ("worker", "1")): pytest.approx(0.30)}


def test_utilisation_counts_only_new_samples_and_exits_drop_the_worker() -> None:
    devices = two_gpus()
    collector = gpu.open_nvml(fake_nvml(devices))
    assert collector is not None
    collector.started(0, 4001)
    collector.started(1, 4002)
    scrape(collector)
    devices[0].samples = [*(devices[0].samples or []), Sample(4001, 30, 10)]
    collector.exited(1)
    got = scrape(collector)
    util = {labels: v for (name, labels), v in got.items()
            if name == "cogserve_worker_gpu_utilization_ratio"}
    assert util == {(("gpu", "0"), ("worker", "0")): pytest.approx(0.10)}
    assert not any(name == "cogserve_worker_gpu_memory_bytes" and ("worker", "1") in labels
                   for name, labels in got)
    # nothing newer: NVML answers NotFound, and the series is simply absent
    got = scrape(collector)
    assert not any(name == "cogserve_worker_gpu_utilization_ratio" for name, _ in got)


def test_no_driver_or_no_gpu_means_no_collector() -> None:
    assert gpu.open_nvml(fake_nvml(two_gpus(), init_fails=True)) is None
    empty = fake_nvml([])
    assert gpu.open_nvml(empty) is None
    assert empty.calls["shutdown"] == 1


def test_without_the_package_nothing_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu, "MODULE", "cogserve_no_such_nvml_module")
    imported: list[str] = []
    monkeypatch.setattr(gpu.importlib, "import_module", imported.append)
    assert gpu.probe() is None
    assert imported == []
