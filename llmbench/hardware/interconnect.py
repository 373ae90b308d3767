"""The GPU-to-GPU interconnect's ceiling: the NVLink links NVML reports active on a GPU, times the
per-link bandwidth of its NVLink generation from NVIDIA's documentation (each figure with its source).

The generation is read from the GPU's compute capability, not from NVML's `nvmlDeviceGetNvLinkVersion`,
whose enum has been reported one generation off (an A100 answering 3.1, an H100 answering 5.0: see
open-mpi/hwloc issue 658 and the workaround in PyTorch's NCCL benchmark script); NVML's answer is kept
beside the figure for the reader. Bandwidths are per direction (what nccl-tests' bus bandwidth is
compared against: its doc/PERFORMANCE.md measures a unidirectional bandwidth). A GPU without active
NVLink links (PCIe only, or no NVML) has no ceiling here: None."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmbench.hardware import nvml
from llmbench.hardware.topology import nvlink_links


@dataclass(frozen=True)
class NvLinkGeneration:
    name: str
    per_link_gb_s: float  # GB/s (1e9 bytes) per link, per direction
    source: str


# compute capability (major, minor) -> its NVLink generation. Per-link figures: the per-GPU total
# (bidirectional) over the GPU's link count, halved for one direction.
NVLINK_BY_CC: dict[tuple[int, int], NvLinkGeneration] = {
    (8, 0): NvLinkGeneration(
        "NVLink 3", 25.0,
        "NVIDIA A100 Tensor Core GPU datasheet: NVLink 600 GB/s; A100 architecture whitepaper: 12 third-"
        "generation NVLink links per GPU (600 / 12 = 50 GB/s per link both directions, 25 each way)"),
    (9, 0): NvLinkGeneration(
        "NVLink 4", 25.0,
        "NVIDIA H100 Tensor Core GPU datasheet (SXM: NVLink 900 GB/s) and nvidia.com/technologies/hopper-"
        "architecture (fourth-generation NVLink, 900 GB/s bidirectional per GPU); 18 links per H100 SXM "
        "(900 / 18 = 50 GB/s per link both directions, 25 each way)"),
    (10, 0): NvLinkGeneration(
        "NVLink 5", 50.0,
        "NVIDIA HGX B200 specifications (NVLink 1.8 TB/s per GPU); 18 fifth-generation links per B200 "
        "(1800 / 18 = 100 GB/s per link both directions, 50 each way)"),
}


@dataclass(frozen=True)
class Interconnect:
    """What NVML says of one GPU's NVLink and the ceiling it gives: active links x per-link bandwidth."""

    active_links: int
    generation: str
    per_link_gb_s: float
    source: str
    nvml_version: Any = None  # NVML's own answer for link 0 (an enum; see the module docstring)

    @property
    def gb_s(self) -> float:
        """The GPU's NVLink bandwidth per direction, GB/s."""
        return self.active_links * self.per_link_gb_s

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "nvlink", "active_links": self.active_links, "generation": self.generation,
                "per_link_gb_s_per_direction": self.per_link_gb_s, "gb_s_per_direction": self.gb_s,
                "source": self.source, "nvml_nvlink_version_enum": self.nvml_version}


def nvlink_ceiling(uuid: str, cc: tuple[int, int]) -> Interconnect | None:
    """The NVLink ceiling of the GPU with this UUID (compute capability `cc`); None where it has no
    active link, NVML cannot say, or its generation is not in NVLINK_BY_CC."""
    handle = nvml.handle_by_uuid(uuid)
    links = nvlink_links(handle) if handle is not None else None
    generation = NVLINK_BY_CC.get(cc)
    if not links or generation is None:
        return None
    return Interconnect(links, generation.name, generation.per_link_gb_s, generation.source,
                        nvml.call("nvmlDeviceGetNvLinkVersion", handle, 0))
