"""A simulated NVML device (the pynvml calls llmbench uses for power limits and MIG), so tests never
touch a real GPU. Its state can live in a JSON file, so a parent process sees what a child did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class FakeNvmlError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


class _Mem:
    def __init__(self, total: int) -> None:
        self.total = total


class _Attrs:
    def __init__(self, sms: int, mem_mb: int) -> None:
        self.multiprocessorCount = sms
        self.memorySizeMB = mem_mb


# (name, SMs, memory MiB) of three MIG devices on a simulated A100-40GB
MIG_DEVICES = [("NVIDIA A100-SXM4-40GB MIG 3g.20gb", 42, 19968), ("NVIDIA A100-SXM4-40GB MIG 2g.10gb", 28, 9856),
               ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", 14, 4864)]


class FakeNvml:
    """One GPU, "GPU-fake-0": limits in mW as NVML gives them, a log of every limit set."""

    UUID = "GPU-fake-0"
    NVMLError = FakeNvmlError  # what pynvml raises for every NVML error code

    def __init__(self, path: Path | None = None, *, current_mw: int = 700_000, root: bool = True,
                 refuse: bool = False, mig: bool = False) -> None:
        self.path = path
        self.root, self.refuse, self.mig = root, refuse, mig
        if path is None or not path.exists():
            self._save({"current_mw": current_mw, "log": []})

    def _load(self) -> dict[str, Any]:
        return json.loads(self.path.read_text()) if self.path else self._mem

    def _save(self, d: dict[str, Any]) -> None:
        if self.path:
            self.path.write_text(json.dumps(d))
        else:
            self._mem = d

    @property
    def current_mw(self) -> int:
        return int(self._load()["current_mw"])

    @property
    def log(self) -> list[int]:
        return list(self._load()["log"])

    # -- pynvml surface -------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        if uuid != self.UUID:
            raise FakeNvmlError(13)
        return "h0"

    def nvmlDeviceGetUUID(self, h: str) -> str:
        if h.startswith("mig"):
            return f"MIG-fake-{h[3:]}"
        return self.UUID

    def nvmlDeviceGetPowerManagementLimit(self, h: str) -> int:
        return self.current_mw

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: str) -> int:
        return 700_000

    def nvmlDeviceGetPowerManagementLimitConstraints(self, h: str) -> tuple[int, int]:
        return (200_000, 700_000)

    def nvmlDeviceSetPowerManagementLimit(self, h: str, mw: int) -> None:
        if not self.root:
            raise FakeNvmlError(4)  # NVML_ERROR_NO_PERMISSION
        if self.refuse:
            raise FakeNvmlError(2)  # NVML_ERROR_INVALID_ARGUMENT
        d = self._load()
        d["current_mw"] = mw
        d["log"].append(mw)
        self._save(d)

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return "h0"

    def nvmlDeviceGetMigMode(self, h: str) -> tuple[int, int]:
        return (1, 1) if self.mig else (0, 0)

    def nvmlDeviceGetMaxMigDeviceCount(self, h: str) -> int:
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: str, i: int) -> str:
        if not self.mig or i >= len(MIG_DEVICES):
            raise FakeNvmlError(6)  # NVML_ERROR_NOT_FOUND
        return f"mig{i}"

    def nvmlDeviceGetName(self, h: str) -> str:
        return MIG_DEVICES[int(h[3:])][0] if h.startswith("mig") else "NVIDIA A100-SXM4-40GB"

    def nvmlDeviceGetMemoryInfo(self, h: str) -> _Mem:
        return _Mem(MIG_DEVICES[int(h[3:])][2] * 2**20 if h.startswith("mig") else 40 * 2**30)

    def nvmlDeviceGetAttributes(self, h: str) -> _Attrs:
        i = int(h[3:])
        return _Attrs(MIG_DEVICES[i][1], MIG_DEVICES[i][2])
