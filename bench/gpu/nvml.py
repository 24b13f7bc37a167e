"""GPU utilisation and memory sampled through NVML while a load runs.

`Sampler` reads GPU 0's utilisation and memory in use (the GPU every system is given),
and the GPU memory of the processes it is told about (the server under test and its
workers), every `period` seconds on a thread of its own. Without the `pynvml` module
(nvidia-ml-py), or without a driver or a GPU (the smoke run), it is
`available = False`, says why, and samples nothing.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Window:
    """What one run's samples came to."""

    util_mean: float | None = None          # % over the samples
    util_max: float | None = None
    memory_max_mib: float | None = None      # all processes
    process_mib: dict[int, float] = field(default_factory=dict)  # pid -> its peak


class Sampler:
    def __init__(self, period: float = 0.1) -> None:
        self.period = period
        self.reason = ""
        self.nvml: Any = None
        self.handles: list[Any] = []
        try:
            import pynvml

            pynvml.nvmlInit()
            # every system runs on GPU 0 (cogserve --gpus 0, LitServe devices=1)
            if pynvml.nvmlDeviceGetCount() > 0:
                self.handles = [pynvml.nvmlDeviceGetHandleByIndex(0)]
            self.nvml = pynvml
            if not self.handles:
                self.reason = "NVML sees no GPU"
        except ImportError:
            self.reason = "pynvml (nvidia-ml-py) is not installed"
        except Exception as exc:  # pynvml.NVMLError: no driver, no library
            self.reason = f"NVML unavailable: {exc}"

    @property
    def available(self) -> bool:
        return bool(self.handles)

    def names(self) -> list[str]:
        out = []
        for handle in self.handles:
            name = self.nvml.nvmlDeviceGetName(handle)
            out.append(name.decode() if isinstance(name, bytes) else str(name))
        return out

    def sample(self, pids: Callable[[], set[int]]) -> _Run:
        return _Run(self, pids)


class _Run:
    """A sampling thread for the length of a `with` block."""

    def __init__(self, sampler: Sampler, pids: Callable[[], set[int]]) -> None:
        self.sampler = sampler
        self.pids = pids
        self.window = Window()
        self._util: list[float] = []
        self._memory: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> _Run:
        if self.sampler.available:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.sampler.available:
            return
        self._stop.set()
        self._thread.join()
        if self._util:
            self.window.util_mean = statistics.fmean(self._util)
            self.window.util_max = max(self._util)
        if self._memory:
            self.window.memory_max_mib = max(self._memory)

    def _loop(self) -> None:
        nvml = self.sampler.nvml
        watched = self.pids()
        while not self._stop.wait(self.sampler.period):
            for handle in self.sampler.handles:
                try:
                    self._util.append(float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
                    self._memory.append(nvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20)
                    for proc in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                        if proc.pid in watched and proc.usedGpuMemory is not None:
                            mib = proc.usedGpuMemory / 2**20
                            peak = self.window.process_mib.get(proc.pid, 0.0)
                            self.window.process_mib[proc.pid] = max(peak, mib)
                except nvml.NVMLError:
                    continue
