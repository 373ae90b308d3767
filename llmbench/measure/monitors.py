"""Monitors around the timed window: torch peak memory; NVML energy, power, SM clock, utilisation
and device memory (sampled in a thread). Absent readings are absent, never zeros."""

from __future__ import annotations

import threading
import time
from typing import Any

from llmbench.hardware import nvml

ENERGY_MIN_WINDOW_S = 1.0  # the NVML energy counter updates about every 100 ms
SAMPLE_PERIOD_S = 0.05


class NvmlSampler:
    """Energy counter at both ends of the window plus a sampling thread for the rest."""

    def __init__(self, handle: Any, period_s: float = SAMPLE_PERIOD_S) -> None:
        self.h = handle
        self.period_s = period_s
        self.samples: dict[str, list[float]] = {
            "power_w": [], "sm_clock_mhz": [], "gpu_util_pct": [], "mem_used_gib": []
        }
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._e0: float | None = None
        self._t0 = 0.0
        self.readings: dict[str, Any] = {}

    def _sample_once(self) -> None:
        p = nvml.call("nvmlDeviceGetPowerUsage", self.h)
        if p is not None:
            self.samples["power_w"].append(p / 1000.0)
        sm = nvml.const("NVML_CLOCK_SM")
        c = nvml.call("nvmlDeviceGetClockInfo", self.h, sm) if sm is not None else None
        if c is not None:
            self.samples["sm_clock_mhz"].append(float(c))
        u = nvml.call("nvmlDeviceGetUtilizationRates", self.h)
        if u is not None:
            self.samples["gpu_util_pct"].append(float(u.gpu))
        m = nvml.call("nvmlDeviceGetMemoryInfo", self.h)
        if m is not None:
            self.samples["mem_used_gib"].append(m.used / 2**30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._sample_once()
            self._stop.wait(self.period_s)

    def start(self) -> None:
        e = nvml.call("nvmlDeviceGetTotalEnergyConsumption", self.h)
        self._e0 = e / 1000.0 if e is not None else None
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="llmbench-nvml")
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        window = time.perf_counter() - self._t0
        e1 = nvml.call("nvmlDeviceGetTotalEnergyConsumption", self.h)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        r: dict[str, Any] = {"window_s": window}
        if self._e0 is not None and e1 is not None:
            r["energy_j"] = e1 / 1000.0 - self._e0
            r["avg_power_w"] = r["energy_j"] / window if window > 0 else None
            r["energy_trusted"] = window >= ENERGY_MIN_WINDOW_S
        for k, v in self.samples.items():
            if v:
                r[k] = v
        self.readings = r
        return r


def open_sampler(device_kind: str) -> NvmlSampler | None:
    """A sampler for the GPU that torch calls cuda:0 in this process, or None (CPU, no NVML, MIG)."""
    if device_kind != "cuda":
        return None
    import torch

    uuid = str(getattr(torch.cuda.get_device_properties(0), "uuid", ""))
    h = nvml.handle_by_uuid(uuid) if uuid else None
    return NvmlSampler(h) if h is not None else None
