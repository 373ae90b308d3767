"""The headline workloads of the H100-vs-A100 answer: for each question (decode at batch 1, a QLoRA
step, the matmul ceiling, ...), the llmbench case that stands for it (a scenario and the params that
pick it out of a GPU's sets), the metric the answer compares, and the family whose projection-error
band applies (as the scenarios declare families: Scenario.family)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmbench.metrics import METRICS, Better
from llmbench.references.published_ratios import PublishedRatio
from llmbench.results import CaseResult

SIXTEEN_BIT = frozenset({"bf16", "fp16"})  # the A100's best dense float precision (the same 312 TFLOP/s peak)


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
