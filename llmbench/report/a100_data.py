"""What the H100-vs-A100 answer is built from: its headline workloads, the committed sets of each GPU
indexed by case id, the published reference sets and claims, and projections of single cases.

A workload names the llmbench case that stands for it (a scenario and the params that pick it out of
the committed sets) and the metric the answer compares. The committed sets of a GPU are indexed case
by case (the newest `ok` result of each id across its measured sets), so a case of the headline
suite and the same case of its source suite (inference-llama3-8b, ...) are one entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmbench.hardware.specs import GpuSpec, lookup
from llmbench.metrics import METRICS, Better
from llmbench.report.inputs import load_checked
from llmbench.report.labels import is_measured
from llmbench.report.project import project_case
from llmbench.report.published_ratios import PublishedRatio, load_ratios
from llmbench.results import CaseResult, ResultSet

H100 = "h100-sxm-80gb"
H200 = "h200-sxm-141gb"
H100_SLUGS = (H100, "h100-pcie-80gb")
# The A100s the committed sets are projected to: SXM 80GB, PCIe 80GB and the 40GB part (the 40GB PCIe has
# the same datasheet bandwidth and peaks as the 40GB SXM, so the same projection).
A100_TARGETS = ("a100-sxm-80gb", "a100-pcie-80gb", "a100-sxm-40gb")
PRIMARY_A100 = "a100-sxm-80gb"  # the A100 the answer compares with when no A100 set is given
PUBLISHED_DIR = "published"
SIXTEEN_BIT = frozenset({"bf16", "fp16"})  # the A100's best dense float precision (the same 312 TFLOP/s peak)
A100_NO_FP8 = ("the A100 (compute capability 8.0) has no fp8, which needs 8.9 (Ada, Hopper): its fp8 cases are "
               "skipped, and the A100's best precision (bf16) stands against the H100's fp8")


def is_a100(slug: str) -> bool:
    return slug.startswith("a100")


@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    scenario: str | None  # None: published figures only (no llmbench case stands for it)
    params: dict[str, Any]  # the params that pick the llmbench case out of a GPU's sets
    metric: str
    family: str  # the projection-error family its band comes from (a100_check.FAMILIES)
    fp8: dict[str, Any] | None = None  # params of the H100's fp8 counterpart (compared with the A100's bf16)
    fp8_only: bool = False  # the case itself is fp8 (the A100 side is its bf16 baseline)
    also: tuple[str, ...] = ()  # other metrics a published figure of it may give (output tok/s for decode)

    @property
    def better(self) -> Better:
        return METRICS[self.metric].better

    @property
    def precisions(self) -> frozenset[str] | None:
        """The precisions a published figure of the workload may have on both sides (None: any)."""
        p = self.params.get("precision")
        return None if p is None else (SIXTEEN_BIT if p in SIXTEEN_BIT else frozenset({p}))

    def picks(self, case: CaseResult) -> bool:
        return (case.scenario == self.scenario and case.status == "ok" and self.metric in case.metrics
                and all(case.params.get(k) == v for k, v in self.params.items()))

    def picks_fp8(self, case: CaseResult) -> bool:
        want = {**self.params, **(self.fp8 or {})}
        return (self.fp8 is not None and case.scenario == self.scenario and case.status == "ok"
                and self.metric in case.metrics and all(case.params.get(k) == v for k, v in want.items()))


_DECODE = {"model": "llama-3-8b", "engine": "hf", "precision": "bf16", "input_len": 128, "output_len": 128,
           "mode": "compiled"}
WORKLOADS: tuple[Workload, ...] = (
    Workload("decode-b1", "Decode, batch 1 (Llama-3-8B, compiled)", "generate", {**_DECODE, "batch_size": 1},
             "decode_tokens_per_s", "decode", {"precision": "fp8"}, also=("output_tokens_per_s",)),
    Workload("decode-b32", "Decode, batch 32 (Llama-3-8B, compiled)", "generate", {**_DECODE, "batch_size": 32},
             "decode_tokens_per_s", "decode", {"precision": "fp8"}, also=("output_tokens_per_s",)),
    Workload("ttft-2048", "TTFT, 2048-token prompt (Llama-3-8B, batch 1)", "generate",
             {"model": "llama-3-8b", "engine": "hf", "precision": "bf16", "batch_size": 1, "input_len": 2048,
              "mode": "eager"}, "ttft_ms", "prefill", {"precision": "fp8"}),
    Workload("qlora-8b", "QLoRA step, Llama-3-8B (batch 4 x 1024)", "qlora",
             {"model": "llama-3-8b", "method": "qlora", "batch_size": 4, "seq_len": 1024, "max_batch": False},
             "train_tokens_per_s", "qlora"),
    Workload("qlora-70b", "QLoRA step, Llama-3-70B (batch 1 x 512)", "qlora",
             {"model": "llama-3-70b", "method": "qlora", "batch_size": 1, "seq_len": 512, "max_batch": False},
             "train_tokens_per_s", "qlora"),
    Workload("trainer-bf16", "Trainer, gpt2-medium bf16 mixed (batch 8 x 512)", "trainer",
             {"model": "gpt2-medium", "precision": "bf16", "tf32": False, "batch_size": 8, "seq_len": 512},
             "train_samples_per_s", "trainer"),
    Workload("trainer-fp32", "Trainer, gpt2-medium fp32 (batch 8 x 512)", "trainer",
             {"model": "gpt2-medium", "precision": "fp32", "tf32": False, "batch_size": 8, "seq_len": 512},
             "train_samples_per_s", "trainer"),
    # The A100 side of the fp8 linear is its bf16 baseline projected as a bf16 matmul: the matmul band.
    Workload("fp8-linear", "fp8 linear, Llama-3-8B gate/up, 16384 tokens (Transformer Engine)", "linear_fp8",
             {"impl": "te-delayed", "proj": "gate_up", "tokens": 16384, "pass_": "fwd"}, "fwd_ms", "matmul",
             fp8_only=True),
    Workload("matmul", "Matmul ceiling, bf16 8192x8192x8192", "gemm",
             {"precision": "bf16", "shape": [8192, 8192, 8192]}, "tflops", "matmul", {"precision": "fp8"}),
    Workload("bandwidth", "Memory bandwidth ceiling (device copy, 4 GiB)", "bandwidth",
             {"kind": "d2d", "size_mib": 4096}, "tb_per_s", "bandwidth"),
    Workload("serving-max-load", "Serving at max load (Llama-3.1-8B, TensorRT-LLM; published only)", None,
             {"precision": "fp16"}, "output_tokens_per_s", "serving", {"precision": "fp8"},
             also=("request_throughput_per_s",)),
)


def workload(key: str) -> Workload:
    return next(w for w in WORKLOADS if w.key == key)


def claim_covers(claim: PublishedRatio, w: Workload) -> bool:
    """A claim names a workload key, or a prefix of several ('trainer': its fp32 and bf16 workloads)."""
    return claim.workload is not None and (w.key == claim.workload or w.key.startswith(claim.workload + "-"))


@dataclass
class CaseIndex:
    """The newest `ok` result of each case id across a GPU's sets, and where each came from."""

    slug: str
    cases: dict[str, CaseResult] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)  # case id -> suite (file stem where known)
    created: dict[str, str] = field(default_factory=dict)
    sets: list[ResultSet] = field(default_factory=list)

    def add(self, rs: ResultSet, name: str) -> None:
        self.sets.append(rs)
        for c in rs.cases:
            if c.status != "ok":
                continue
            if c.id not in self.cases or rs.created_at > self.created[c.id]:
                self.cases[c.id], self.origin[c.id], self.created[c.id] = c, name, rs.created_at

    def find(self, pick: Any) -> CaseResult | None:
        """The newest case `pick(case)` accepts."""
        found = [c for cid, c in self.cases.items() if pick(c)]
        return max(found, key=lambda c: self.created[c.id]) if found else None

    def skipped(self, case_id: str) -> CaseResult | None:
        """The case as a set has it where no set has it `ok` (a skip, with its reason)."""
        return next((c for rs in self.sets for c in rs.cases if c.id == case_id and c.status != "ok"), None)

    def values(self, case_id: str, metric: str) -> list[float]:
        """The metric of the case in every set that has it ok: the runs behind the newest one."""
        return [m.value for rs in self.sets for c in rs.cases
                if c.id == case_id and c.status == "ok" and (m := c.metrics.get(metric)) is not None]


def committed_index(results_dir: Path, slug: str) -> CaseIndex:
    """Every measured result set committed under results/<slug>/ (not benchmarks/ or checks/)."""
    idx = CaseIndex(slug)
    folder = results_dir / slug
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        rs = load_checked(path)
        if is_measured(rs):
            idx.add(rs, f"{slug}/{path.name}")
    return idx


def sets_index(sets: list[tuple[str, ResultSet]], slug: str) -> CaseIndex:
    idx = CaseIndex(slug)
    for name, rs in sets:
        idx.add(rs, name)
    return idx


@dataclass(frozen=True)
class PublishedFigure:
    case: CaseResult
    slug: str
    rs: ResultSet

    @property
    def match(self) -> dict[str, Any]:
        return dict(self.case.info.get("match") or {})

    @property
    def source(self) -> str:
        return self.rs.suite

    @property
    def precision(self) -> str:
        return str(self.case.params.get("precision", ""))


def published_figures(results_dir: Path) -> list[PublishedFigure]:
    """Every published case that names the answer's workload it informs (info.match.workload)."""
    out: list[PublishedFigure] = []
    folder = results_dir / PUBLISHED_DIR
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
        for path in sorted(sub.glob("*.json")):
            rs = load_checked(path)
            out += [PublishedFigure(c, rs.gpu_slug, rs) for c in rs.cases
                    if c.status == "ok" and (c.info.get("match") or {}).get("workload")]
    return out


def published_claims(results_dir: Path) -> list[PublishedRatio]:
    return load_ratios(results_dir / PUBLISHED_DIR)


def spec(slug: str) -> GpuSpec:
    got = lookup(slug)
    if got is None:
        raise KeyError(slug)
    return got


def projected_value(case: CaseResult, src: str, dst: str, metric: str) -> tuple[float | None, str | None]:
    """The metric of `case` (measured on `src`) as the roofline projection puts it on `dst`, or None and
    why (a skip reason, or the metric cannot be projected)."""
    p = project_case(case, spec(src), spec(dst))
    if p.status != "ok":
        return None, p.reason
    m = p.metrics.get(metric)
    return (m.value, None) if m is not None else (None, f"{metric} is not projected")
