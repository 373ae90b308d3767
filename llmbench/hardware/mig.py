"""MIG, read-only: the instances a GPU is split into, and what a full-GPU figure becomes on a slice.

llmbench never enables, creates or destroys MIG instances (that is `nvidia-smi mig`, as root); it
only lists them. A process sees one MIG device (CUDA_VISIBLE_DEVICES=MIG-<uuid>)."""

from __future__ import annotations

import contextlib
import re
from typing import Any

from llmbench.hardware import nvml
from llmbench.hardware.roofline import Bound

PROFILE = re.compile(r"(\d+)g\.(\d+)gb")


def _text(v: Any) -> str:
    return str(nvml.text(v))


def instances(handle: Any, backend: Any | None = None) -> list[dict[str, Any]]:
    """The MIG devices of one GPU: profile (e.g. "1g.5gb"), memory, SM count, UUID. Empty when MIG is
    off, unsupported, or NVML is not there (nothing here raises)."""
    nv = backend if backend is not None else nvml.library()
    if nv is None:
        return []
    try:
        if not nv.nvmlDeviceGetMigMode(handle)[0]:
            return []
        count = int(nv.nvmlDeviceGetMaxMigDeviceCount(handle))
    except nv.NVMLError:  # MIG not supported on this GPU
        return []
    out = []
    for i in range(count):
        try:
            h = nv.nvmlDeviceGetMigDeviceHandleByIndex(handle, i)
        except nv.NVMLError:  # NOT_FOUND: that slot holds no instance
            continue
        name = _text(nv.nvmlDeviceGetName(h))
        m = PROFILE.search(name)
        item: dict[str, Any] = {"profile": m.group(0) if m else name, "uuid": _text(nv.nvmlDeviceGetUUID(h))}
        with contextlib.suppress(nv.NVMLError):
            item["memory_gib"] = round(nv.nvmlDeviceGetMemoryInfo(h).total / 2**30, 1)
        with contextlib.suppress(nv.NVMLError):
            item["sm_count"] = int(nv.nvmlDeviceGetAttributes(h).multiprocessorCount)
        out.append(item)
    return out


def profile_share(profile: str, compute_slices: int = 7, memory_gb: float = 40) -> dict[str, float]:
    """A MIG profile's share of its GPU from its name: "3g.20gb" on an A100-40GB (7 compute slices) is
    3/7 of the SMs' slices and 20/40 of the memory."""
    m = PROFILE.fullmatch(profile)
    if not m:
        raise ValueError(f"MIG profile {profile!r} is not of the form <N>g.<M>gb (e.g. 1g.5gb)")
    return {"compute": int(m.group(1)) / compute_slices, "memory": int(m.group(2)) / memory_gb}


def slice_figure(full: float, share: dict[str, float], bound: Bound = "compute") -> float:
    """What a full-GPU throughput figure becomes on one slice, if it scales with the slice's share of
    the resource that binds it (compute: SMs; memory: memory, standing in for bandwidth). An
    expectation to hold a slice's measurement against, not a measurement."""
    return full * share[bound]


def all_instances(backend: Any | None = None) -> list[dict[str, Any]]:
    """The MIG devices of every GPU NVML sees, each with its parent GPU's index."""
    nv = backend if backend is not None else nvml.library()
    if nv is None:
        return []
    try:
        parents = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
    except nv.NVMLError:
        return []
    return [{"gpu": i, **item} for i, h in enumerate(parents) for item in instances(h, nv)]


def describe(items: list[dict[str, Any]]) -> str:
    """One line for `llmbench doctor`."""
    parts = [f"{d['profile']} ({d.get('sm_count', '?')} SMs, {d.get('memory_gib', '?')} GiB, {d['uuid']})"
             for d in items]
    return (f"{len(items)} MIG instance(s): " + "; ".join(parts) + ". Run on one with --gpus MIG-<uuid>; "
            "llmbench only reads MIG, it never enables or changes it")


# Compute slices per GPU as MIG defines them: 7 on every MIG GPU (A100, H100, H200, B200, ...) but
# the A30 (4). A slice "<g>g.<m>gb" holds g of them and m GB of the GPU's memory.
_FOUR_SLICES = re.compile(r"\ba30\b", re.IGNORECASE)
MIG_NAME = re.compile(r"\s+MIG\b.*$", re.IGNORECASE)


def compute_slices(gpu_name: str) -> int:
    """The compute slices a MIG GPU is made of: 4 on an A30, 7 on the others."""
    return 4 if _FOUR_SLICES.search(gpu_name) else 7


def parent_name(gpu_name: str) -> str:
    """The GPU's own name, without the " MIG 3g.20gb" a MIG device's name carries."""
    return MIG_NAME.sub("", gpu_name).strip()


def slice_profile(gpu: dict[str, Any]) -> str | None:
    """The MIG profile (e.g. "3g.20gb") a result set's GPU (`env.gpu`) was a slice of, or None for a
    full GPU. Read from `mig_profile`, from `mig_mode` where it holds a profile (published sets), from a
    MIG device's name ("... MIG 3g.20gb"), or from the recorded instance whose UUID the run was
    pinned to (`visible_devices` = MIG-<uuid>)."""
    for key in ("mig_profile", "mig_mode"):
        v = gpu.get(key)
        if isinstance(v, str) and PROFILE.fullmatch(v):
            return v
    m = re.search(rf"\bMIG\s+({PROFILE.pattern})", str(gpu.get("name", "")), re.IGNORECASE)
    if m:
        return m.group(1).lower()
    return instance_profile(gpu.get("mig_instances") or [], gpu.get("visible_devices"))


def instance_profile(items: list[dict[str, Any]], visible: str | None) -> str | None:
    """The profile of the MIG instance a process runs on: the first CUDA_VISIBLE_DEVICES entry, when it
    names a MIG UUID that `items` (`all_instances`) lists."""
    first = (visible or "").split(",")[0].strip()
    if not first.startswith("MIG-"):
        return None
    return next((str(d["profile"]) for d in items if d.get("uuid") == first), None)


def is_slice(gpu: dict[str, Any]) -> bool:
    """Whether a result set ran on a MIG slice: a known profile, or MIG enabled (the profile unknown: a
    process on a MIG GPU runs on one of its instances, never on the whole GPU)."""
    return slice_profile(gpu) is not None or gpu.get("mig_mode") == "enabled"


def slices_side_by_side(profile: str, compute_slices: int = 7, memory_gb: float = 40) -> int:
    """How many slices of one profile fit the GPU at once: its compute slices over the profile's g, and
    no more than its memory holds (7 x 1g.5gb, 3 x 2g.10gb, 2 x 3g.20gb on an A100-40GB)."""
    share = profile_share(profile, compute_slices, memory_gb)
    return int(min(1 / share["compute"] + 1e-9, 1 / share["memory"] + 1e-9))
