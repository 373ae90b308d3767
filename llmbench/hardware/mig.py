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
    except Exception:
        return []
    out = []
    for i in range(count):
        try:
            h = nv.nvmlDeviceGetMigDeviceHandleByIndex(handle, i)
        except Exception:  # NOT_FOUND: that slot holds no instance
            continue
        name = _text(nv.nvmlDeviceGetName(h))
        m = PROFILE.search(name)
        item: dict[str, Any] = {"profile": m.group(0) if m else name, "uuid": _text(nv.nvmlDeviceGetUUID(h))}
        with contextlib.suppress(Exception):
            item["memory_gib"] = round(nv.nvmlDeviceGetMemoryInfo(h).total / 2**30, 1)
        with contextlib.suppress(Exception):
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
    except Exception:
        return []
    return [{"gpu": i, **item} for i, h in enumerate(parents) for item in instances(h, nv)]


def describe(items: list[dict[str, Any]]) -> str:
    """One line for `llmbench doctor`."""
    parts = [f"{d['profile']} ({d.get('sm_count', '?')} SMs, {d.get('memory_gib', '?')} GiB, {d['uuid']})"
             for d in items]
    return (f"{len(items)} MIG instance(s): " + "; ".join(parts) + ". Run on one with --gpus MIG-<uuid>; "
            "llmbench only reads MIG, it never enables or changes it")
