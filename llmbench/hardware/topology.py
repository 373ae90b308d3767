"""How a node's GPUs are joined, read through NVML (no torch): the NVLink links each GPU has up and its
PCIe link; and the environment variables that keep NVLink multicast off in the processes llmbench
starts (shared machines: a program that uses multicast can put the host's GPUs out of service).

The fingerprint records `interconnect` (one entry per visible GPU) and, for more than one GPU, a
`topology` label that says how they are joined; analysis/runs.py never pools runs of different labels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llmbench.hardware import nvml

# NVLink multicast off (NCCL's NVLS algorithm, torch's symmetric-memory multicast, NVSHMEM's NVLS): what the
# test machines' image sets, and what every rank llmbench starts keeps unless NCCL_NVLS_ENABLE=1 asks for it
MULTICAST_OFF_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def multicast_wanted(env: Mapping[str, str]) -> bool:
    """Whether the environment asks for NVLink multicast (NCCL_NVLS_ENABLE=1, the user's own choice)."""
    return env.get("NCCL_NVLS_ENABLE") == "1"


def multicast_off(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with multicast kept off: the machine's own values stand, a variable it leaves unset gets the
    off value; an environment that asks for multicast is left as it is."""
    out = dict(env)
    if not multicast_wanted(env):
        for k, v in MULTICAST_OFF_ENV.items():
            out.setdefault(k, v)
    return out


def multicast_settings(env: Mapping[str, str]) -> dict[str, str | None]:
    """The multicast variables as `env` holds them (None: unset), for a code path or doctor."""
    return {k: env.get(k) for k in MULTICAST_OFF_ENV}


def nvlink_links(h: Any) -> int | None:
    """How many of the GPU's NVLink links are up (nvmlDeviceGetNvLinkState over its links); None where
    NVML cannot say (no NVML, a GPU without NVLink answers NOT_SUPPORTED on its first link)."""
    top = nvml.const("NVML_NVLINK_MAX_LINKS")
    if top is None:
        return None
    states = [nvml.call("nvmlDeviceGetNvLinkState", h, link) for link in range(int(top))]
    if all(s is None for s in states):
        return None
    return sum(1 for s in states if s)


def pcie_link(h: Any) -> dict[str, int]:
    """The GPU's PCIe link: generation and width now and at most (an idle link trains down, so the
    maximum is the comparable figure)."""
    calls = {"pcie_gen": "nvmlDeviceGetCurrPcieLinkGeneration", "pcie_width": "nvmlDeviceGetCurrPcieLinkWidth",
             "pcie_gen_max": "nvmlDeviceGetMaxPcieLinkGeneration", "pcie_width_max": "nvmlDeviceGetMaxPcieLinkWidth"}
    out = {k: nvml.call(name, h) for k, name in calls.items()}
    return {k: int(v) for k, v in out.items() if v is not None}


def interconnect(handles: Sequence[Any]) -> list[dict[str, int]]:
    """One entry per GPU (in the order given): its NVLink links up and its PCIe link."""
    out = []
    for h in handles:
        entry = pcie_link(h)
        links = nvlink_links(h)
        if links is not None:
            entry["nvlink_links"] = links
        out.append(entry)
    return out


def topology_label(links: Sequence[Mapping[str, int]]) -> str | None:
    """How several GPUs are joined, as one stable label: "NVLink, 18 links per GPU" where every GPU has
    links up (the fewest, where they differ), else their PCIe link ("PCIe gen5 x16"); None for one GPU
    or where NVML said nothing."""
    if len(links) < 2:
        return None
    nv = [e.get("nvlink_links", 0) for e in links]
    if all(n > 0 for n in nv):
        return f"NVLink, {min(nv)} links per GPU"
    gens = [e["pcie_gen_max"] for e in links if "pcie_gen_max" in e]
    widths = [e["pcie_width_max"] for e in links if "pcie_width_max" in e]
    if gens and widths:
        return f"PCIe gen{min(gens)} x{min(widths)}"
    return None
