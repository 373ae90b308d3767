"""Thin, failure-tolerant access to NVML (nvidia-ml-py). Without NVML every call returns None:
a machine without an NVIDIA driver has no NVML readings, and that is not an error."""

from __future__ import annotations

from typing import Any


def library() -> Any | None:
    """pynvml, initialised; None without nvidia-ml-py or a driver (NVML's library-not-found error)."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    return pynvml


def handles() -> list[Any]:
    nv = library()
    if nv is None:
        return []
    try:
        return [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
    except nv.NVMLError:
        return []


def handle_by_uuid(uuid: str) -> Any | None:
    """NVML handle of the device torch calls cuda:0 (matched by UUID, immune to index reordering)."""
    nv = library()
    if nv is None:
        return None
    for cand in (uuid, f"GPU-{uuid}", uuid.removeprefix("GPU-")):
        try:
            return nv.nvmlDeviceGetHandleByUUID(cand)
        except nv.NVMLError:  # not found under that spelling
            continue
    return None


def call(name: str, *args: Any) -> Any | None:
    """nvml.<name>(*args), or None when NVML or the query is not available here."""
    nv = library()
    if nv is None:
        return None
    try:
        return getattr(nv, name)(*args)
    except nv.NVMLError:  # NOT_SUPPORTED and the like: no reading here
        return None


def const(name: str) -> Any | None:
    nv = library()
    return getattr(nv, name, None) if nv is not None else None


def text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def device_summary(h: Any) -> dict[str, Any]:
    """Read-only facts of one GPU: name, memory, driver, power limit, MIG mode, clocks."""
    info: dict[str, Any] = {}
    info["name"] = text(call("nvmlDeviceGetName", h))
    mem = call("nvmlDeviceGetMemoryInfo", h)
    if mem is not None:
        info["memory_gib"] = round(mem.total / 2**30, 1)
    pl = call("nvmlDeviceGetEnforcedPowerLimit", h)
    if pl is not None:
        info["power_limit_w"] = round(pl / 1000)
    mig = call("nvmlDeviceGetMigMode", h)
    if mig is not None:
        info["mig_mode"] = "enabled" if mig[0] else "disabled"
    sm = const("NVML_CLOCK_SM")
    mx = call("nvmlDeviceGetMaxClockInfo", h, sm) if sm is not None else None
    if mx is not None:
        info["max_sm_clock_mhz"] = mx
    info["pci_bus_id"] = text(getattr(call("nvmlDeviceGetPciInfo", h), "busId", None))
    return {k: v for k, v in info.items() if v is not None}


def driver_version() -> str | None:
    v = call("nvmlSystemGetDriverVersion")
    return text(v) if v is not None else None


def compute_processes(h: Any) -> list[dict[str, Any]]:
    """Processes holding a compute context on this GPU (pid and memory only: nothing identifying)."""
    procs = call("nvmlDeviceGetComputeRunningProcesses", h) or []
    out = []
    for p in procs:
        used = getattr(p, "usedGpuMemory", None)
        out.append({"pid": int(p.pid), "used_gib": round(used / 2**30, 2) if used else None})
    return out


def temperature_c(h: Any) -> float | None:
    """GPU core temperature in °C (NVML_TEMPERATURE_GPU), or None."""
    sensor = const("NVML_TEMPERATURE_GPU")
    t = call("nvmlDeviceGetTemperature", h, sensor) if sensor is not None else None
    return float(t) if t is not None else None


_REASON_PREFIXES = ("nvmlClocksEventReason", "nvmlClocksThrottleReason")
_NOT_REASONS = ("All", "None")


def decode_reasons(mask: int, table: dict[str, int]) -> list[str]:
    """Names of the bits set in an NVML clock-event bitmask, from a {name: bit} table."""
    return sorted(name for name, bit in table.items() if bit and mask & bit)


def reason_table() -> dict[str, int]:
    """{"SwPowerCap": 0x4, ...} from the installed nvidia-ml-py (newer names first, older as fallback)."""
    nv = library()
    if nv is None:
        return {}
    table: dict[str, int] = {}
    for prefix in _REASON_PREFIXES:
        for attr in dir(nv):
            name = attr.removeprefix(prefix)
            if attr.startswith(prefix) and name not in _NOT_REASONS and name not in table:
                table[name] = int(getattr(nv, attr))
    return table


def clock_reasons(h: Any, table: dict[str, int]) -> list[str] | None:
    """Why the clocks are where they are now (power cap, thermal slowdown, ...), or None."""
    mask = call("nvmlDeviceGetCurrentClocksEventReasons", h)
    if mask is None:
        mask = call("nvmlDeviceGetCurrentClocksThrottleReasons", h)
    return decode_reasons(int(mask), table) if mask is not None else None


def pid_alive(pid: int) -> bool:
    """Whether a process with this id still runs (one of another user's counts too): one that has ended
    but is not yet reaped by its parent (a zombie) does not."""
    import os
    from pathlib import Path

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (not Linux), or it has just gone
        return not Path("/proc").is_dir()
    return stat[stat.rindex(")") + 2:][:1] != "Z"  # the state follows the command name in parentheses
