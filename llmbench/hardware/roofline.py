"""Roofline bounds for generation: how fast a case could possibly run on this GPU.

Decode is bounded by the bytes read per step (weights at their stored bits + the KV cache at the
current length) over memory bandwidth, or by its FLOPs over peak, whichever is slower; prefill
mostly by FLOPs (2 * params * tokens + causal attention) over peak. Efficiency = bound / measured.
Pure arithmetic: no torch here, so it is cheap to test and to use for estimates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from llmbench.hardware.specs import GpuSpec
from llmbench.models.shape import ModelShape

Bound = Literal["memory", "compute"]  # which ceiling limits a quantity

FAR_BELOW = 0.5  # efficiency under this is flagged with a likely cause
HOST_BOUND_GPU_SHARE = 0.6  # GPU busy for less than this share of a step: the host is the bottleneck

# Which dense peak (GpuSpec.tflops key) the matmuls of a precision run at. Weight-only schemes
# dequantize to bf16 and multiply in bf16.
PEAK_KEY: dict[str, str] = {
    "fp32": "fp32",
    "tf32": "tf32",
    "fp16": "fp16",
    "bf16": "bf16",
    "fp8": "fp8",
    "fp8-wo": "bf16",
    "int8": "bf16",
    "int4": "bf16",
    "nf4": "bf16",
    "fp4": "bf16",
    "llm-int8": "int8",
}
# Bytes per activation / KV-cache element and per unquantized weight (lm_head) of a precision.
ACT_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4}
DEFAULT_ACT_BYTES = 2


def act_bytes(precision: str) -> int:
    return ACT_BYTES.get(precision, DEFAULT_ACT_BYTES)


def weight_bytes(shape: ModelShape, weight_bits: float, elem_bytes: int) -> float:
    """Bytes of weights one decode step reads: every matmul weight once (embedding rows: negligible)."""
    return shape.linear_params * weight_bits / 8 + shape.lm_head_params * elem_bytes


def decode_step_bytes(shape: ModelShape, batch: int, context: int, weight_bits: float, elem_bytes: int) -> float:
    return weight_bytes(shape, weight_bits, elem_bytes) + batch * context * shape.kv_bytes_per_token(elem_bytes)


def decode_step_flops(shape: ModelShape, batch: int, context: int) -> float:
    """Matmuls (2 per weight per token) plus attention over `context` cached tokens (QK and PV)."""
    attn = 4 * shape.layers * shape.heads * shape.head_dim * context
    return batch * (2 * (shape.linear_params + shape.lm_head_params) + attn)


def prefill_flops(shape: ModelShape, batch: int, input_len: int) -> float:
    """2 * params * tokens for the blocks, causal attention (half of the s x s products), and the
    lm_head on the last position only (as generate() computes it)."""
    attn = 2 * shape.layers * shape.heads * shape.head_dim * input_len * input_len
    return batch * (2 * shape.linear_params * input_len + attn + 2 * shape.lm_head_params)


@dataclass(frozen=True)
class Ceiling:
    """The roof: memory bandwidth (measured where a ceilings run exists, else the datasheet) and
    the dense peak of the precision's matmuls."""

    bandwidth_tb_s: float
    peak_tflops: float
    bandwidth_source: str


@dataclass(frozen=True)
class GenerationBound:
    prefill_s: float
    decode_step_s: float  # mean over the decode steps (context grows by one each step)
    decode_kind: str  # "memory" or "compute": what binds the decode steps
    ceiling: Ceiling

    def as_info(self) -> dict[str, object]:
        return {
            "prefill_bound_ms": self.prefill_s * 1e3,
            "decode_step_bound_ms": self.decode_step_s * 1e3,
            "decode_bound_by": self.decode_kind,
            "bandwidth_tb_s": self.ceiling.bandwidth_tb_s,
            "bandwidth_source": self.ceiling.bandwidth_source,
            "peak_tflops": self.ceiling.peak_tflops,
        }


def generation_bound(
    shape: ModelShape,
    ceiling: Ceiling,
    *,
    batch: int,
    input_len: int,
    output_len: int,
    weight_bits: float,
    elem_bytes: int,
) -> GenerationBound:
    """Bound times of one generate(): prefill, and the mean decode step over output_len - 1 steps."""
    bw = ceiling.bandwidth_tb_s * 1e12
    peak = ceiling.peak_tflops * 1e12
    steps = max(output_len - 1, 1)
    mem_total = comp_total = total = 0.0
    for j in range(1, steps + 1):
        ctx = input_len + j
        mem = decode_step_bytes(shape, batch, ctx, weight_bits, elem_bytes) / bw
        comp = decode_step_flops(shape, batch, ctx) / peak
        mem_total, comp_total, total = mem_total + mem, comp_total + comp, total + max(mem, comp)
    prefill = max(prefill_flops(shape, batch, input_len) / peak, weight_bytes(shape, weight_bits, elem_bytes) / bw)
    return GenerationBound(prefill, total / steps, "memory" if mem_total >= comp_total else "compute", ceiling)


def ceiling_for(spec: GpuSpec, precision: str, measured_tb_s: float | None = None) -> Ceiling:
    """The roof for `precision` on `spec`; a measured device-copy bandwidth beats the datasheet."""
    peak = spec.tflops.get(PEAK_KEY.get(precision, "bf16")) or spec.tflops["bf16"]
    if measured_tb_s:
        return Ceiling(measured_tb_s, peak, "measured (ceilings suite, device copy)")
    return Ceiling(spec.bandwidth_tb_s, peak, f"datasheet ({spec.source})")


def measured_bandwidth_tb_s(slug: str, results_dir: Path = Path("results")) -> float | None:
    """Device-copy bandwidth from the newest `results/<slug>/ceilings-*.json` that has an ok
    `bandwidth` case of kind d2d (the best of its buffer sizes: the ceiling); None when there is none
    (the datasheet figure is used then)."""
    folder = results_dir / slug
    if not folder.is_dir():
        return None
    for path in sorted(folder.glob("ceilings-*.json"), reverse=True):  # UTC timestamps sort by name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        found = [
            float(case["metrics"]["tb_per_s"]["value"])
            for case in data.get("cases", [])
            if case.get("scenario") == "bandwidth"
            and case.get("status") == "ok"
            and case.get("params", {}).get("kind") == "d2d"
            and "tb_per_s" in case.get("metrics", {})
        ]
        if found:
            return max(found)
    return None


def measured_peak_tflops(slug: str, precision: str, results_dir: Path = Path("results")) -> float | None:
    """Matmul peak of `precision` from the newest `results/<slug>/ceilings-*.json` that has ok `gemm`
    cases of it (the best of its shapes: the ceiling); None when there is none (use the spec table)."""
    folder = results_dir / slug
    if not folder.is_dir():
        return None
    for path in sorted(folder.glob("ceilings-*.json"), reverse=True):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        found = [
            float(case["metrics"]["tflops"]["value"])
            for case in data.get("cases", [])
            if case.get("scenario") == "gemm"
            and case.get("status") == "ok"
            and case.get("params", {}).get("precision") == precision
            and "tflops" in case.get("metrics", {})
        ]
        if found:
            return max(found)
    return None


def diagnose(
    efficiency: float,
    *,
    tpot_s: float,
    bound_s: float,
    cpu_step_s: float | None,
    gpu_step_s: float | None,
    batch: int,
) -> list[str]:
    """Flags for a decode far below its bound, with the likely cause in words."""
    if efficiency >= FAR_BELOW:
        return []
    head = (
        f"decode at {efficiency:.0%} of its roofline bound ({bound_s * 1e3:.3f} ms/step vs {tpot_s * 1e3:.3f} measured)"
    )
    if gpu_step_s is not None and gpu_step_s < HOST_BOUND_GPU_SHARE * tpot_s:
        cpu = f"{cpu_step_s * 1e3:.2f} ms" if cpu_step_s is not None else "n/a"
        return [
            f"{head}; host-bound: CPU time per step {cpu} vs GPU {gpu_step_s * 1e3:.2f} ms "
            f"(the GPU is busy {gpu_step_s / tpot_s:.0%} of each step; Python and kernel launches "
            "set the pace, so this measures the CPU as much as the GPU; try mode=compiled)"
        ]
    if gpu_step_s is not None:
        return [
            f"{head}; kernel-bound: the GPU is busy {gpu_step_s * 1e3:.2f} ms per step, so the kernels "
            "themselves are slow (dequantization overhead, unfused attention, or an engine inefficiency)"
        ]
    small = " at batch size 1, launch overhead may dominate" if batch == 1 else ""
    return [f"{head}; GPU busy time unknown{small}"]


def busy_time(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of (start, end) intervals: the time a device was busy with at least one
    kernel (overlapping kernels on several streams count once)."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None and cur_s is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None and cur_s is not None:
        total += cur_e - cur_s
    return total
