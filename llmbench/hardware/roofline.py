"""Roofline bounds for generation: how fast a case could possibly run on this GPU.

Decode is bounded by the bytes read per step (weights at their stored bits + the KV cache at the
current length) over memory bandwidth, or by its FLOPs over peak, whichever is slower; prefill
mostly by FLOPs (2 * params * tokens + causal attention) over peak. Efficiency = bound / measured.
Pure arithmetic: no torch here, so it is cheap to test and to use for estimates.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from llmbench import precision as prec
from llmbench.hardware.specs import GpuSpec
from llmbench.models.shape import ModelShape

Bound = Literal["memory", "compute"]  # which ceiling limits a quantity

FAR_BELOW = 0.5  # efficiency under this is flagged with a likely cause
HOST_BOUND_GPU_SHARE = 0.6  # GPU busy for less than this share of a step: the host is the bottleneck
CEILINGS_ENV = "LLMBENCH_CEILINGS"  # where a case reads measured ceilings: set by `llmbench run --ceilings`

def act_bytes(precision: str) -> int:
    """Bytes per activation / KV-cache element and per unquantized weight (llmbench.precision)."""
    return prec.get(precision).act_bytes


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

    def over(self, gpus: int) -> Ceiling:
        """The roof of a model sharded over `gpus` GPUs (tensor parallel): each reads and multiplies its
        own shard, so bandwidth and peak add up; what the all-reduce costs is what the efficiency shows."""
        if gpus <= 1:
            return self
        return Ceiling(self.bandwidth_tb_s * gpus, self.peak_tflops * gpus,
                       f"{self.bandwidth_source}, x{gpus} GPUs (tensor parallel)")


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
    """The roof for `precision` on `spec`; a measured device-copy bandwidth beats the datasheet (a
    `Measured` one names the result set it came from)."""
    peak = spec.tflops.get(prec.get(precision).peak_key) or spec.tflops["bf16"]
    if measured_tb_s:
        where = f", {measured_tb_s.source}" if isinstance(measured_tb_s, Measured) else ""
        return Ceiling(measured_tb_s, peak, f"measured (ceilings suite, device copy{where})")
    return Ceiling(spec.bandwidth_tb_s, peak, f"datasheet ({spec.source})")


class Measured(float):
    """A measured ceiling that carries the result set it was read from (`source`), so that a case
    records where its roof came from."""

    source: str

    def __new__(cls, value: float, source: str) -> Measured:
        obj = super().__new__(cls, value)
        obj.source = source
        return obj


def ceilings_sources() -> list[Path]:
    """Where measured ceilings are read, as configured for this process: the paths in LLMBENCH_CEILINGS
    (separated like PATH; each a result set or a results folder). `llmbench run` sets it for its case
    processes (its --ceilings, else its --out). Unset: none, and the roofline uses the datasheet; the
    working directory is never searched by default."""
    return [Path(p) for p in os.environ.get(CEILINGS_ENV, "").split(os.pathsep) if p]


def ceilings_sets(slug: str, sources: Sequence[Path]) -> list[Path]:
    """The result sets a ceiling of GPU `slug` may come from, in the order they are tried: a set named
    itself, else a results folder's `<slug>/ceilings-*.json`, newest first."""
    out: list[Path] = []
    for src in sources:
        if src.is_file():
            out.append(src)
        elif (src / slug).is_dir():
            out += sorted((src / slug).glob("ceilings-*.json"), reverse=True)  # UTC timestamps sort by name
    return out


def best_measured(
    slug: str, scenario: str, metric: str, where: dict[str, object], results_dir: Path | None = None
) -> Measured | None:
    """The best `metric` of ok cases of `scenario` whose params match `where`, from the first result set
    of `ceilings_sets` that has one (a set named itself must be of GPU `slug`): a measured ceiling, with
    its set as its source. Searched in `results_dir` where given, else where `ceilings_sources` says.
    None when there is none (the datasheet figure is used then). The scenario that measures the
    ceiling names itself here (llmbench.scenarios.bandwidth.measured_copy_tb_s), so this module knows
    no scenario."""
    sources = [results_dir] if results_dir is not None else ceilings_sources()
    for path in ceilings_sets(slug, sources):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if ((data.get("env") or {}).get("gpu") or {}).get("slug", slug) != slug:
            continue
        found = [
            float(case["metrics"][metric]["value"])
            for case in data.get("cases", [])
            if case.get("scenario") == scenario
            and case.get("status") == "ok"
            and all(case.get("params", {}).get(k) == v for k, v in where.items())
            and metric in case.get("metrics", {})
        ]
        if found:
            return Measured(max(found), str(path.resolve()))
    return None


def diagnose(
    efficiency: float,
    *,
    tpot_s: float,
    bound_s: float,
    cpu_step_s: float | None,
    gpu_step_s: float | None,
    batch: int,
    eager: bool = True,
) -> list[str]:
    """Flags for a decode far below its bound, with the likely cause in words and, for a host-bound
    one, what to try: compiling where the loop runs eagerly, a larger batch where it is compiled."""
    if efficiency >= FAR_BELOW:
        return []
    head = (
        f"decode at {efficiency:.0%} of its roofline bound ({bound_s * 1e3:.3f} ms/step vs {tpot_s * 1e3:.3f} measured)"
    )
    if gpu_step_s is not None and gpu_step_s < HOST_BOUND_GPU_SHARE * tpot_s:
        cpu = f"{cpu_step_s * 1e3:.2f} ms" if cpu_step_s is not None else "n/a"
        try_next = "try mode=compiled" if eager else "a larger batch gives the GPU more work per step"
        return [
            f"{head}; host-bound: CPU time per step {cpu} vs GPU {gpu_step_s * 1e3:.2f} ms "
            f"(the GPU is busy {gpu_step_s / tpot_s:.0%} of each step; Python and kernel launches "
            f"set the pace, so this measures the CPU as much as the GPU; {try_next})"
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
