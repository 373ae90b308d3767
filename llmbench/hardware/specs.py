"""GPU spec table: peak dense TFLOP/s per precision, memory bandwidth, memory, TDP, compute
capability, each entry with its source; and the canonical slug of a GPU name.

Figures are vendor datasheet values for dense math (no 2:4 sparsity). Where a datasheet prints only
the with-sparsity tensor figure (marked "*" there), the dense figure is half of it and the entry's
notes say so. They are leads, not measurements: llmbench prefers a measured ceiling (the `ceilings`
suite) where one exists. `fp64` is the non-tensor-core FP64 rate (the FP64 tensor-core rate, where
higher, is in `extra["fp64_tensor"]`). GeForce cards run FP16/BF16/FP8 tensor math with FP32
accumulation (what PyTorch uses) at half their FP16-accumulate rate; the table holds the FP32-accumulate
figure and keeps the other in `extra`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PRECISIONS: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")


@dataclass(frozen=True)
class GpuSpec:
    slug: str
    name: str
    match: str  # regex over the driver's device name (case-insensitive)
    memory_gib: float
    bandwidth_tb_s: float
    tflops: dict[str, float]  # dense peak per precision: fp64, fp32, tf32, fp16, bf16, fp8, int8 (TOPS)
    tdp_w: float
    cc: tuple[int, int]
    source: str
    min_memory_gib: float = 0.0  # to tell 40 GB from 80 GB parts of one name
    notes: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    def peak(self, precision: str) -> float | None:
        """Dense peak TFLOP/s for a precision name; None where the GPU has no such math."""
        return self.tflops.get(_ALIASES.get(precision, precision))


# Precision names of the llmbench precision axis that run on another precision's units.
_ALIASES = {
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "float8": "fp8",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
    "float64": "fp64",
    "half": "fp16",
}

_A100_SRC = "NVIDIA A100 Tensor Core GPU datasheet (jun21, 1.0), nvidia.com"
_H100_SRC = "NVIDIA H100 Tensor Core GPU datasheet (2023), nvidia.com"
_H200_SRC = "NVIDIA H200 Tensor Core GPU datasheet (2024, H200 SXM column), nvidia.com"
_L40S_SRC = "NVIDIA L40S GPU datasheet (2023), nvidia.com"
_L4_SRC = "NVIDIA L4 Tensor Core GPU datasheet (2023), nvidia.com"
_A10_SRC = "NVIDIA A10 Tensor Core GPU datasheet (2021), nvidia.com"
_GA102_SRC = "NVIDIA Ampere GA102 GPU architecture whitepaper (v2.1), table 'GeForce RTX 3090'"
_AD102_SRC = "NVIDIA Ada GPU architecture whitepaper (v2.1), table 'GeForce RTX 4090'"
_B200_SRC = "NVIDIA HGX B200 specifications, 'Individual Blackwell GPU Specifications' (nvidia.com, 2025)"
_HALF_SPARSE = "dense tensor figures are half the datasheet's with-sparsity figures"

_A100_T = {"fp64": 9.7, "fp32": 19.5, "tf32": 156, "fp16": 312, "bf16": 312, "int8": 624}
_H100_SXM_T = {"fp64": 34, "fp32": 67, "tf32": 494.5, "fp16": 989.5, "bf16": 989.5, "fp8": 1979, "int8": 1979}

SPECS: list[GpuSpec] = [
    GpuSpec("h100-sxm-80gb", "NVIDIA H100 SXM5 80GB", r"h100.*(sxm|hbm3)", 80, 3.35, _H100_SXM_T, 700, (9, 0),
            _H100_SRC + ", H100 SXM column", notes=_HALF_SPARSE, extra={"fp64_tensor": 67}),
    GpuSpec("h100-nvl-94gb", "NVIDIA H100 NVL 94GB", r"h100.*nvl", 94, 3.9,
            {"fp64": 30, "fp32": 60, "tf32": 417.5, "fp16": 835.5, "bf16": 835.5, "fp8": 1670.5, "int8": 1670.5}, 400,
            (9, 0), _H100_SRC + ", H100 NVL column", notes=_HALF_SPARSE + "; TDP 350-400 W", extra={"fp64_tensor": 60}),
    GpuSpec("h100-pcie-80gb", "NVIDIA H100 PCIe 80GB", r"h100.*pcie", 80, 2.0,
            {"fp64": 26, "fp32": 51, "tf32": 378, "fp16": 756.5, "bf16": 756.5, "fp8": 1513, "int8": 1513}, 350, (9, 0),
            _H100_SRC + ", H100 PCIe column", notes=_HALF_SPARSE + "; TDP 300-350 W", extra={"fp64_tensor": 51}),
    GpuSpec("h200-sxm-141gb", "NVIDIA H200 SXM 141GB", r"h200(?!.*nvl)", 141, 4.8, _H100_SXM_T, 700, (9, 0), _H200_SRC,
            notes=_HALF_SPARSE, extra={"fp64_tensor": 67}),
    GpuSpec("a100-sxm-80gb", "NVIDIA A100 SXM4 80GB", r"a100.*sxm", 80, 2.039, _A100_T, 400, (8, 0),
            _A100_SRC + ", A100 80GB SXM column", min_memory_gib=60, notes=_HALF_SPARSE, extra={"fp64_tensor": 19.5}),
    GpuSpec("a100-sxm-40gb", "NVIDIA A100 SXM4 40GB", r"a100.*sxm", 40, 1.555, _A100_T, 400, (8, 0),
            _A100_SRC + ", A100 40GB SXM column (1,555 GB/s)", notes=_HALF_SPARSE, extra={"fp64_tensor": 19.5}),
    GpuSpec("a100-pcie-80gb", "NVIDIA A100 PCIe 80GB", r"a100.*pcie", 80, 1.935, _A100_T, 300, (8, 0),
            _A100_SRC + ", A100 80GB PCIe column", min_memory_gib=60, notes=_HALF_SPARSE, extra={"fp64_tensor": 19.5}),
    GpuSpec("a100-pcie-40gb", "NVIDIA A100 PCIe 40GB", r"a100.*pcie", 40, 1.555, _A100_T, 250, (8, 0),
            _A100_SRC + ", A100 40GB PCIe column (1,555 GB/s, 250 W)", notes=_HALF_SPARSE, extra={"fp64_tensor": 19.5}),
    GpuSpec("l40s-48gb", "NVIDIA L40S 48GB", r"l40s", 48, 0.864,
            {"fp32": 91.6, "tf32": 183, "fp16": 362.05, "bf16": 362.05, "fp8": 733, "int8": 733}, 350, (8, 9),
            _L40S_SRC, notes="datasheet prints dense and sparse; dense used; no FP64 figure given"),
    GpuSpec("l4-24gb", "NVIDIA L4 24GB", r"\bl4\b", 24, 0.3,
            {"fp32": 30.3, "tf32": 60, "fp16": 121, "bf16": 121, "fp8": 242.5, "int8": 242.5}, 72, (8, 9), _L4_SRC,
            notes=_HALF_SPARSE + " (the L4 datasheet prints only those)"),
    GpuSpec("a10-24gb", "NVIDIA A10 24GB", r"\ba10\b", 24, 0.6,
            {"fp32": 31.2, "tf32": 62.5, "fp16": 125, "bf16": 125, "int8": 250}, 150, (8, 6), _A10_SRC,
            notes="datasheet prints dense and sparse; dense used"),
    GpuSpec("rtx-3090-24gb", "NVIDIA GeForce RTX 3090", r"rtx 3090(?! ti)", 24, 0.936,
            {"fp32": 35.6, "tf32": 35.6, "fp16": 71, "bf16": 71, "int8": 284}, 350, (8, 6), _GA102_SRC,
            notes="FP16/BF16 with FP32 accumulate (FP16 accumulate: extra)", extra={"fp16_fp16_accumulate": 142}),
    GpuSpec("rtx-4090-24gb", "NVIDIA GeForce RTX 4090", r"rtx 4090", 24, 1.008,
            {"fp32": 82.6, "tf32": 82.6, "fp16": 165.2, "bf16": 165.2, "fp8": 330.3, "int8": 660.6}, 450, (8, 9),
            _AD102_SRC, notes="FP16/BF16/FP8 with FP32 accumulate (FP16 accumulate: extra)",
            extra={"fp16_fp16_accumulate": 330.3, "fp8_fp16_accumulate": 660.6}),
    GpuSpec("b200-180gb", "NVIDIA B200 (HGX) 180GB", r"\bb200\b", 180, 7.7,
            {"fp64": 37, "fp32": 75, "tf32": 1100, "fp16": 2250, "bf16": 2250, "fp8": 4500, "int8": 4500}, 1000,
            (10, 0), _B200_SRC, notes=_HALF_SPARSE + "; TDP configurable up to 1,000 W",
            extra={"fp4": 9000, "fp64_tensor": 37}),
]


def lookup(slug: str) -> GpuSpec | None:
    return next((s for s in SPECS if s.slug == slug), None)


def slugs() -> list[str]:
    return [s.slug for s in SPECS]


def match_name(name: str, memory_gib: float | None = None) -> GpuSpec | None:
    """The spec whose pattern matches a driver-reported name (and memory size, where parts differ).

    The driver reports 40 GB A100s as 39.4 GiB and 80 GB ones as 79.2 GiB: memory picks the part when
    given; without it the names themselves ("A100-SXM4-40GB", "A100 80GB PCIe") decide.
    """
    candidates = [s for s in SPECS if re.search(s.match, name, re.IGNORECASE)]
    if len(candidates) > 1:
        stated = re.search(r"(\d+)\s*GB", name, re.IGNORECASE)
        if memory_gib is not None:
            candidates = [s for s in candidates if memory_gib >= s.min_memory_gib] or candidates
            candidates.sort(key=lambda s: -s.min_memory_gib)
        elif stated is not None:
            candidates = [s for s in candidates if round(s.memory_gib) == int(stated.group(1))] or candidates
    return candidates[0] if candidates else None


def slug_for(name: str, memory_gib: float | None = None) -> str:
    """Canonical slug of a GPU ('h100-sxm-80gb'); unknown GPUs get one made from the name."""
    spec = match_name(name, memory_gib)
    if spec is not None:
        return spec.slug
    base = re.sub(r"[^a-z0-9]+", "-", name.lower().replace("nvidia", "")).strip("-")
    mem = f"-{round(memory_gib)}gb" if memory_gib and "gb" not in base else ""
    return f"{base}{mem}" or "unknown-gpu"
