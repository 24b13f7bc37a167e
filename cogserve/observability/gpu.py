"""GPU figures in /metrics through NVML: each GPU's utilisation and memory, and each
worker process's share of them.

An optional extra (`pip install 'cogserve[gpu]'`, the `nvidia-ml-py` package, imported as
`pynvml`). `probe` is asked once, when the metrics are built: without the package it
costs one `find_spec` and nothing is imported; without a driver or a GPU, NVML's own
`nvmlInit` fails and there is no collector. Either way /metrics has no GPU series, and
there is never a thread: NVML is read when Prometheus scrapes, as the slots are.

A worker is found on a GPU by its pid in NVML's list of the processes using that GPU
(`nvmlDeviceGetComputeRunningProcesses`). NVML reports host pids: inside a container
that has its own pid namespace they differ from the worker's, and only the per-GPU series
appear. The GPUs are labelled by NVML's index, which is CUDA's order only under
`CUDA_DEVICE_ORDER=PCI_BUS_ID` (CUDA's default puts the fastest first); `--gpus` values
are passed to the workers' `CUDA_VISIBLE_DEVICES` as they are.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

MODULE = "pynvml"  # what nvidia-ml-py installs


def probe() -> GpuCollector | None:
    """The collector of this machine's GPUs, or None: no NVML package, driver or GPU."""
    if importlib.util.find_spec(MODULE) is None:
        return None
    return open_nvml(importlib.import_module(MODULE))


def open_nvml(nvml: ModuleType) -> GpuCollector | None:
    """A collector reading through `nvml` (pynvml, or a stand-in in tests), or None when
    NVML cannot start or sees no GPU."""
    try:
        nvml.nvmlInit()
    except nvml.NVMLError:
        return None
    try:
        count = int(nvml.nvmlDeviceGetCount())
    except nvml.NVMLError:
        count = 0
    if count == 0:
        nvml.nvmlShutdown()
        return None
    return GpuCollector(nvml, count)


class GpuCollector(Collector):
    """Reads NVML at scrape time. The workers' pids come from the runtime's
    WORKER_STARTED / WORKER_EXITED events (`started`, `exited`)."""

    def __init__(self, nvml: ModuleType, count: int) -> None:
        self.nvml = nvml
        self.count = count
        self.workers: dict[int, int] = {}  # worker index -> pid
        # per GPU, NVML's timestamp (µs) of the newest process sample already read, so
        # each scrape averages the samples taken since the one before
        self._seen: dict[int, int] = {}

    def started(self, worker: int, pid: int | None) -> None:
        if pid is not None:
            self.workers[worker] = pid

    def exited(self, worker: int) -> None:
        self.workers.pop(worker, None)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        nvml = self.nvml
        util = GaugeMetricFamily(
            "cogserve_gpu_utilization_ratio", "Fraction of NVML's last sample period (1/6 "
            "to 1 s) in which a kernel ran on the GPU, by NVML index", labels=["gpu"])
        used = GaugeMetricFamily("cogserve_gpu_memory_used_bytes", "GPU memory in use, all "
                                 "processes", labels=["gpu"])
        total = GaugeMetricFamily("cogserve_gpu_memory_total_bytes", "GPU memory installed",
                                  labels=["gpu"])
        info = GaugeMetricFamily("cogserve_gpu_info", "1 per GPU, with its name and UUID",
                                 labels=["gpu", "name", "uuid"])
        worker_mem = GaugeMetricFamily(
            "cogserve_worker_gpu_memory_bytes", "GPU memory a worker process holds (NVML's "
            "per-process figure)", labels=["worker", "gpu"])
        worker_util = GaugeMetricFamily(
            "cogserve_worker_gpu_utilization_ratio", "A worker process's SM utilisation, "
            "averaged over NVML's samples since the last scrape (where the GPU reports it)",
            labels=["worker", "gpu"])
        by_pid = {pid: str(worker) for worker, pid in list(self.workers.items())}
        for index in range(self.count):
            gpu = str(index)
            handle = _call(nvml, nvml.nvmlDeviceGetHandleByIndex, index)
            if handle is None:
                continue
            name = _call(nvml, nvml.nvmlDeviceGetName, handle)
            uuid = _call(nvml, nvml.nvmlDeviceGetUUID, handle)
            info.add_metric([gpu, _text(name), _text(uuid)], 1.0)
            rates = _call(nvml, nvml.nvmlDeviceGetUtilizationRates, handle)
            if rates is not None:
                util.add_metric([gpu], rates.gpu / 100.0)
            memory = _call(nvml, nvml.nvmlDeviceGetMemoryInfo, handle)
            if memory is not None:
                used.add_metric([gpu], float(memory.used))
                total.add_metric([gpu], float(memory.total))
            if not by_pid:
                continue
            for process in _call(nvml, nvml.nvmlDeviceGetComputeRunningProcesses, handle) or ():
                worker = by_pid.get(process.pid)
                # usedGpuMemory is None where the driver withholds it (some containers)
                if worker is not None and process.usedGpuMemory is not None:
                    worker_mem.add_metric([worker, gpu], float(process.usedGpuMemory))
            for worker, ratio in self._process_utilisation(index, handle, by_pid).items():
                worker_util.add_metric([worker, gpu], ratio)
        yield from (util, used, total, info, worker_mem, worker_util)

    def _process_utilisation(self, index: int, handle: Any,
                             by_pid: dict[int, str]) -> dict[str, float]:
        """The workers' mean SM utilisation in the samples since the last scrape."""
        samples = _call(self.nvml, self.nvml.nvmlDeviceGetProcessUtilization, handle,
                        self._seen.get(index, 0))
        if not samples:  # NotFound (no sample since then) and NotSupported alike
            return {}
        sums: dict[str, list[float]] = {}
        newest = self._seen.get(index, 0)
        for sample in samples:
            newest = max(newest, int(sample.timeStamp))
            worker = by_pid.get(sample.pid)
            if worker is not None:
                acc = sums.setdefault(worker, [0.0, 0.0])
                acc[0] += sample.smUtil
                acc[1] += 1
        self._seen[index] = newest
        return {worker: acc[0] / acc[1] / 100.0 for worker, acc in sums.items()}


def _call(nvml: ModuleType, function: Any, *args: Any) -> Any:
    """NVML's answer, or None where this GPU or driver does not support the question."""
    try:
        return function(*args)
    except nvml.NVMLError:
        return None


def _text(value: Any) -> str:
    """Older pynvml releases answer bytes where newer ones answer str."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return "" if value is None else str(value)
