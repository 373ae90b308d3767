"""Published A100 and H100 figures for llmbench's own workloads, kept as result sets under
results/published/<gpu-slug>/ (the H100-vs-A100 question: no A100 is on the test machines).

Every figure is copied from the cited source (units converted only where noted). Each case carries,
in `info.match`, how well the source's conditions match the llmbench case it stands for: the
answer's workload it informs, a quality (`MATCH_QUALITIES`), the source's conditions (model,
precision, lengths, batch, engine, form factor, power limit), what differs from the llmbench case
and the row or sentence it was copied from. A figure that stands for an llmbench case has that
case's params, so its id joins the committed H100 and H200 sets (`llmbench compare`); a figure of the
source's own workload (TensorRT-LLM's tables) has the source's params and joins only its own kind.
Where a form factor or memory size is not stated, the slug is an assumption and the GPU name says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llmbench.ids import case_id
from llmbench.results import CaseResult, MetricResult, ResultSet, Source

# How a published figure matches the llmbench case it joins: the same model, precision and batch on
# other software, lengths perhaps differing (close); another model, precision, batch or kind of
# measurement of the same bound (loose); the source's own workload, which joins no llmbench case.
MATCH_QUALITIES = ("close", "loose", "own workload")


@dataclass(frozen=True)
class Match:
    workload: str | None  # the key of the answer's workload it informs (analysis/a100.py WORKLOADS)
    quality: str
    quote: str  # the source's row or sentence, as printed
    conditions: dict[str, str]  # model, precision, lengths, batch, engine, form_factor, power_limit
    differences: tuple[str, ...] = ()  # from the llmbench case it joins

    def info(self) -> dict[str, Any]:
        assert self.quality in MATCH_QUALITIES, self.quality
        return {"match": {"workload": self.workload, "quality": self.quality, "quote": self.quote,
                          "conditions": dict(self.conditions), "differences": list(self.differences)}}


def _figure(scenario: str, params: dict[str, Any], metrics: dict[str, float], match: Match) -> CaseResult:
    return CaseResult(
        id=case_id(scenario, params), scenario=scenario, params=params, status="ok",
        metrics={k: MetricResult.single(k, v) for k, v in metrics.items()}, info=match.info(),
    )


@dataclass
class _Source:
    suite: str
    created: str  # the source's date (a placeholder day where only the year or month is known: see note)
    citation: str
    url: str | None
    note: str
    gpus: dict[str, str] = field(default_factory=dict)  # slug -> the GPU as the source names it

    def sets(self, cases: dict[str, list[CaseResult]]) -> dict[str, ResultSet]:
        return {
            slug: ResultSet(
                suite=self.suite, created_at=self.created,
                env={"gpu": {"name": self.gpus[slug], "slug": slug, "count": 1}}, cases=got,
                source=Source(kind="published", citation=self.citation, url=self.url, note=self.note),
            )
            for slug, got in cases.items()
        }


# -- the llmbench cases these figures stand for (the headline's params, so their ids join) -----------

def decode_params(precision: str, batch: int = 1) -> dict[str, Any]:
    """The headline's Llama-3-8B decode case (inference-llama3-8b.toml: random weights, compiled)."""
    return {"model": "llama-3-8b", "pretrained": None, "weights": "random", "engine": "hf", "precision": precision,
            "batch_size": batch, "input_len": 128, "output_len": 128, "mode": "compiled"}


D2D_PARAMS: dict[str, Any] = {"kind": "d2d", "size_mib": 4096, "pinned": None}


def mamf_params(precision: str) -> dict[str, Any]:
    """The mamf suite's case (its default search ranges)."""
    return {"precision": precision, "m": [4096, 16384, 2048], "n": [4096, 16384, 2048], "k": [4096, 16384, 4096]}


WEIGHTS_DIFFER = "real weights (llmbench: random weights of the same shape; decode speed does not depend on them)"
TOKS_DIFFER = ("the source's tokens/s over the whole generate call (a few-token prompt's prefill included), "
               "shown as decode_tokens_per_s")

# -- gpt-fast (pytorch-labs): A100 only ------------------------------------------------------------

GPT_FAST = _Source(
    "gpt-fast-a100-2024", "2024-04-28T00:00:00Z",
    "pytorch-labs/gpt-fast, README.md at commit 6e00f49 ('Add Llama3-8B perf numbers', 2024-04-28), section "
    "'Benchmarks': 'Benchmarks run on an 8xA100-80GB, power limited to 330W with a hybrid cube mesh topology. "
    "Note that all benchmarks are run at *batch size=1* ... with a very small prompt length (just 5 tokens).'",
    "https://github.com/pytorch-labs/gpt-fast/blob/6e00f492758fdb350df14cb19870e32c7b1ac788/README.md",
    "A100 only (no H100 figure in the source); created_at is the commit's author date",
    {"a100-sxm-80gb": "NVIDIA A100 80GB (form factor inferred: SXM, power-limited to 330 W, above a PCIe part's "
                      "300 W maximum)"},
)
_GPT_FAST_COND = {"engine": "gpt-fast (torch.compile, static KV cache)", "batch": "1",
                  "lengths": "prompt 5 tokens; output: the script's default (200 new tokens)",
                  "form_factor": "SXM4 80GB (inferred from the 330 W limit)", "power_limit": "330 W (SXM TDP 400 W)"}


def gpt_fast_sets() -> dict[str, ResultSet]:
    diffs = ("engine gpt-fast, not llmbench's transformers engine", "prompt 5 tokens, not 128; 200 new tokens, not 128",
             WEIGHTS_DIFFER, TOKS_DIFFER, "power-limited to 330 W")
    cases = [
        _figure("generate", decode_params("bf16"), {"decode_tokens_per_s": 93.95}, Match(
            "decode-b1", "close", "| Llama-3-8B  | Base    |  93.95  | 1508.18 |",
            {**_GPT_FAST_COND, "model": "Meta-Llama-3-8B", "precision": "bf16"}, diffs)),
        _figure("generate", decode_params("int8"), {"decode_tokens_per_s": 114.35}, Match(
            "decode-b1", "close", "|           | 8-bit   | 114.35   | 978.02 |",
            {**_GPT_FAST_COND, "model": "Meta-Llama-3-8B", "precision": "int8 weight-only (gpt-fast's own)"},
            (*diffs, "gpt-fast's int8 weight-only kernels (llmbench int8: torchao's)"))),
        _figure("bandwidth", D2D_PARAMS, {"tb_per_s": 1.7}, Match(
            "bandwidth", "loose",
            "Note: Running on an A100 80GB, albeit power-limited to 330 watts. Empirically, seems like peak "
            "bandwidth is about 1700 GB/s.",
            {"model": "-", "precision": "-", "lengths": "-", "batch": "-", "engine": "the authors' estimate from "
             "decoding, not a copy benchmark", "form_factor": "SXM4 80GB (inferred)", "power_limit": "330 W"},
            ("an estimate ('about 1700 GB/s') from decoding, not a device-to-device copy", "power-limited to 330 W",
             "GB/s in the source, / 1000 here"))),
    ]
    return GPT_FAST.sets({"a100-sxm-80gb": cases})


# -- torchao (pytorch/ao): A100 and H100 from one source -------------------------------------------

TORCHAO = _Source(
    "torchao-decode-2024", "2024-10-07T00:00:00Z",
    "pytorch/ao, torchao/quantization/README.md at commit 92dd5f557 ('Dynamic Float8 benchmarking llama', "
    "2024-10-07), section 'Benchmarks': 'run on a machine with a single NVIDIA-A100-80GB GPU' (Meta-Llama-3-8B) "
    "and 'run on a machine with a single NVIDIA-H100 GPU' (Meta-Llama-3.1-8B), torchao/_models/llama/generate.py "
    "--compile; column 'Tokens/Second'",
    "https://github.com/pytorch/ao/blob/92dd5f557d32ce616a138dfe0bdc195355271514/torchao/quantization/README.md",
    "batch 1 (the script's default); form factors not stated, filed under SXM as an assumption; created_at is "
    "the commit date",
    {"a100-sxm-80gb": "NVIDIA A100 80GB (the source says 'NVIDIA-A100-80GB'; form factor not stated, SXM assumed)",
     "h100-sxm-80gb": "NVIDIA H100 (the source says 'NVIDIA-H100'; SXM assumed: its 1,905 GB/s achieved bandwidth "
                      "is 95% of an H100 PCIe's 2.0 TB/s datasheet peak)"},
)
_TORCHAO_COND = {"engine": "torchao generate.py (gpt-fast derived, torch.compile)", "batch": "1",
                 "lengths": "prompt 'Hello, my name is'; 200 new tokens (the script's defaults)",
                 "power_limit": "not stated"}
# llmbench precision -> (torchao technique, A100 Llama-3-8B row, A100 tok/s, H100 Llama-3.1-8B row, H100 tok/s)
TORCHAO_ROWS: dict[str, tuple[str, str | None, float | None, str, float]] = {
    "bf16": ("Base (bfloat16)", "| Llama-3-8B  | Base (bfloat16)         |  7.441              |   95.64       |",
             95.64, "| Llama-3.1-8B  | Base (bfloat16)         |  7.54               |  126.90       |", 126.90),
    "int8": ("int8wo", "|             | int8wo                  |  7.447              |  153.03       |", 153.03,
             "|               | int8wo                  |  7.56               |  198.85       |", 198.85),
    "int4": ("int4wo-64", "|             | int4wo-64               |  8.316              |  180.80       |",
             180.80, "|               | int4wo-64               |  8.44               |  241.39       |", 241.39),
    "fp8-wo": ("float8wo", None, None,
               "|               | float8wo                |  7.60               |  178.46       |", 178.46),
    "fp8": ("float8dq (Per Row)", None, None,
            "|               | float8dq (Per Row)      |  7.61               |  154.63       |", 154.63),
}


def torchao_sets() -> dict[str, ResultSet]:
    out: dict[str, list[CaseResult]] = {"a100-sxm-80gb": [], "h100-sxm-80gb": []}
    for prec, (technique, a_row, a_val, h_row, h_val) in TORCHAO_ROWS.items():
        diffs = ["engine torchao's generate.py, not llmbench's transformers engine",
                 "prompt of a few tokens, not 128; 200 new tokens, not 128", WEIGHTS_DIFFER, TOKS_DIFFER]
        if prec == "int4":
            diffs.append("group size 64 (llmbench int4: 128)")
        for slug, row, val, model, ff in (
            ("a100-sxm-80gb", a_row, a_val, "Meta-Llama-3-8B", "not stated (SXM assumed)"),
            ("h100-sxm-80gb", h_row, h_val, "Meta-Llama-3.1-8B", "not stated (SXM assumed)"),
        ):
            if row is None or val is None:
                continue
            extra = ("Llama-3.1-8B: Llama-3-8B's architecture with longer RoPE scaling",) if "3.1" in model else ()
            out[slug].append(_figure("generate", decode_params(prec), {"decode_tokens_per_s": val}, Match(
                "decode-b1", "close", row,
                {**_TORCHAO_COND, "model": model, "precision": f"{technique} (torchao)", "form_factor": ff},
                (*diffs, *extra))))
    return TORCHAO.sets(out)


# -- ml-engineering's MAMF table (Stas Bekman): A100, H100, H200 -------------------------------------

MAMF = _Source(
    "mamf-ml-engineering", "2026-08-10T00:00:00Z",
    "stas00/ml-engineering, compute/accelerator/README.md at commit 744d01e (file last changed 2026-08-10), "
    "'Maximum Achievable Matmul FLOPS comparison table': 'measurements are for matmul with BF16 and FP8 inputs "
    "(no sparsity) TFLOPS ... Reporting a mean of 100 iterations after 50 warmup iterations for each shape'",
    "https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/compute/accelerator/"
    "README.md",
    "each row the best shape of the author's own search (mamf-finder.py) on its own torch version; rows added "
    "between 2025-01 and 2025-07 (git history); memory sizes not stated (slugs assumed)",
    {"a100-sxm-80gb": "NVIDIA A100 SXM (memory size not stated; 80GB assumed, the bf16 peak is the same)",
     "a100-pcie-80gb": "NVIDIA A100 PCIe (memory size not stated; 80GB assumed, the bf16 peak is the same)",
     "h100-sxm-80gb": "NVIDIA H100 SXM", "h200-sxm-141gb": "NVIDIA H200 SXM"},
)
# slug -> precision -> (TFLOP/s, the row as printed)
MAMF_ROWS: dict[str, dict[str, tuple[float, str]]] = {
    "a100-sxm-80gb": {"bf16": (271.2, "| NVIDIA A100 SXM  |  271.2 |    312 |      86.9% |  1024x10240x5120 | "
                                      "2.6.0+cu126 |")},
    "a100-pcie-80gb": {"bf16": (252.9, "| NVIDIA A100 PCIe |  252.9 |    312 |      81.1% |   2048x5120x6144 | "
                                       "2.5.1+cu124 |")},
    "h100-sxm-80gb": {
        "bf16": (794.5, "| NVIDIA H100 SXM  |  794.5 |    989 |      80.3% |  2048x2048x13312 | 2.7.0+cu126 | "
                        "H200 is the same |"),
        "fp8": (1402.6, "| NVIDIA H100 SXM  | 1402.6 |   1979 |      70.9% |  1024x9216x14336 | 2.7.0+cu126 |"),
    },
    "h200-sxm-141gb": {"fp8": (1453.4, "| NVIDIA H200 SXM  | 1453.4 |   1979 |      73.4% |  1280x4096x12032 | "
                                       "2.7.1+cu128 |")},
}


def mamf_sets() -> dict[str, ResultSet]:
    out: dict[str, list[CaseResult]] = {}
    for slug, rows in MAMF_ROWS.items():
        for prec, (tflops, row) in rows.items():
            shape, torch_v = row.split("|")[5].strip(), row.split("|")[6].strip()
            out.setdefault(slug, []).append(_figure("mamf", mamf_params(prec), {"tflops": tflops}, Match(
                "matmul", "close", row,
                {"model": "-", "precision": prec, "lengths": "-", "batch": "-",
                 "engine": f"mamf-finder.py, torch {torch_v}", "form_factor": MAMF.gpus[slug],
                 "power_limit": "not stated"},
                (f"the author's own shape search (best shape {shape}; llmbench searches M, N 4096-16384 and K "
                 "4096-16384)", "mean of 100 iterations per shape (llmbench: its per-shape median)"))))
    return MAMF.sets(out)


# -- TensorRT-LLM's performance overview (v0.14.0): A100 and H100 per input/output length ------------

TRTLLM_014 = _Source(
    "trtllm-v0.14-llama3.1-8b-throughput", "2024-01-01T00:00:00Z",
    "NVIDIA TensorRT-LLM documentation, docs/source/performance/perf-overview.md, the revision that says 'All data "
    "in the table below was generated using version 0.14.0 and presents token throughput in tokens/second', rows "
    "'LLaMA v3.1 8B', TP Size 1; 'a local inference client is fed requests at an infinite rate' (trtllm-bench "
    "throughput)",
    "https://github.com/NVIDIA/TensorRT-LLM/blob/v0.14.0/docs/source/performance/perf-overview.md",
    "offline max-throughput figures (batch chosen by the engine, not stated); created_at is a placeholder (the "
    "v0.14.0 release, 2024)",
    {"h200-sxm-141gb": "NVIDIA H200 141GB HBM3", "h100-sxm-80gb": "NVIDIA H100 80GB HBM3",
     "a100-sxm-80gb": "NVIDIA A100-SXM4-80GB", "a100-pcie-80gb": "NVIDIA A100-PCIE-80GB"},
)
# (slug, precision) columns of the table, in order
TRTLLM_014_COLUMNS = (("h200-sxm-141gb", "fp8"), ("h100-sxm-80gb", "fp8"), ("h100-sxm-80gb", "fp16"),
                      ("a100-sxm-80gb", "fp16"), ("a100-pcie-80gb", "fp16"))
TRTLLM_014_LLAMA31_8B: dict[tuple[int, int], tuple[float, ...]] = {
    (1000, 1000): (16414.6988, 14108.0361, 7054.5156, 3634.3886, 3165.3542),
    (128, 128): (27778.8885, 26933.1886, 15571.6549, 6701.7958, 5338.0166),
    (128, 2048): (22948.5383, 18995.2523, 9150.7477, 4963.4443, 4250.6391),
    (128, 4096): (15583.3035, 11815.449, 5368.9227, 3011.3335, 2568.5398),
    (20000, 2000): (1649.5453, 1301.4754, 562.8735, 316.533, 291.4776),
    (2048, 128): (3619.4309, 3460.3545, 1904.3259, 795.389, 611.8446),
    (2048, 2048): (11032.9729, 8777.6623, 4159.6857, 2264.9513, 2011.1215),
    (500, 2000): (19510.4015, 14993.328, 7498.3331, 3945.1912, 3374.7133),
    (5000, 500): (3787.6721, 3258.2001, 1708.0353, 790.6631, 703.56),
}


def serving_params(model: str, precision: str, isl: int, osl: int, version: str) -> dict[str, Any]:
    return {"model": model, "engine": "trtllm", "engine_version": version, "precision": precision, "tp": 1,
            "input_len": isl, "output_len": osl, "request_rate": "inf"}


def trtllm_014_sets() -> dict[str, ResultSet]:
    out: dict[str, list[CaseResult]] = {}
    for (isl, osl), row in TRTLLM_014_LLAMA31_8B.items():
        for (slug, prec), value in zip(TRTLLM_014_COLUMNS, row, strict=True):
            name = TRTLLM_014.gpus[slug].removeprefix("NVIDIA ")
            out.setdefault(slug, []).append(_figure(
                "serving", serving_params("llama-3.1-8b", prec, isl, osl, "0.14.0"), {"output_tokens_per_s": value},
                Match("serving-max-load", "own workload",
                      f"row 'LLaMA v3.1 8B' {isl}/{osl}, TP Size 1, column '{name}' '{prec.upper()}': {value}",
                      {"model": "Llama-3.1-8B", "precision": prec, "lengths": f"{isl}/{osl}",
                       "batch": "not stated (max throughput)", "engine": "TensorRT-LLM 0.14.0 (trtllm-bench)",
                       "form_factor": name, "power_limit": "not stated"})))
    return TRTLLM_014.sets(out)


# -- TensorRT-LLM v0.5: H100 FP8 against A100 FP16 (first-token latency; the 4.6x blog) ---------------

TRTLLM_05_LATENCY = _Source(
    "trtllm-v0.5-first-token-latency", "2023-12-01T00:00:00Z",
    "NVIDIA TensorRT-LLM, docs/source/performance.md at commit 138f96d ('This data has been updated for v0.6.1'), "
    "section 'Low Latency' ('The following data is from TensorRT-LLM v0.5'), tables 'H100 GPUs (FP8)' and "
    "'A100 GPUs (FP16)', column '1st Token Latency (ms)', batch size 1, TP 1",
    "https://github.com/NVIDIA/TensorRT-LLM/blob/138f96d45f90b9667426f7c47297d8c06bafac73/docs/source/performance.md",
    "H100 in FP8, A100 in FP16 (the A100 has no FP8); form factors not stated (SXM assumed; the page's "
    "reproduction section names an H100-HBM3-80GB system); created_at is a placeholder (v0.6.1, late 2023)",
    {"h100-sxm-80gb": "NVIDIA H100 (FP8; form factor not stated, SXM assumed)",
     "a100-sxm-80gb": "NVIDIA A100 (FP16; form factor not stated, SXM assumed)"},
)
# (model as printed, llmbench-style name, input length) -> (H100 FP8 ms, A100 FP16 ms)
TRTLLM_05_TTFT: dict[tuple[str, str, int], tuple[float, float]] = {
    ("GPT-J 6B", "gpt-j-6b", 128): (7, 12),
    ("GPT-J 6B", "gpt-j-6b", 2048): (29, 129),
    ("LLaMA 7B", "llama-2-7b", 128): (7, 16),
    ("LLaMA 7B", "llama-2-7b", 2048): (36, 133),
}


def latency_params(model: str, precision: str, batch: int, isl: int, osl: int | None, version: str) -> dict[str, Any]:
    return {"model": model, "engine": "trtllm", "engine_version": version, "precision": precision, "tp": 1,
            "batch_size": batch, "input_len": isl, "output_len": osl}


def trtllm_05_latency_sets() -> dict[str, ResultSet]:
    out: dict[str, list[CaseResult]] = {}
    for (printed, model, isl), values in TRTLLM_05_TTFT.items():
        for slug, prec, ms in (("h100-sxm-80gb", "fp8", values[0]), ("a100-sxm-80gb", "fp16", values[1])):
            out.setdefault(slug, []).append(_figure(
                "generate", latency_params(model, prec, 1, isl, None, "0.5.0"), {"ttft_ms": ms},
                Match("ttft-2048" if isl == 2048 else None, "own workload",
                      f"table '{'H100' if prec == 'fp8' else 'A100'} GPUs ({prec.upper()})', row '{printed}', "
                      f"batch size 1, TP 1, input length {isl}: {ms:g}",
                      {"model": printed + (" (Llama 2 7B: the methodology names Llama2-7b)" if "LLaMA" in printed
                                           else ""),
                       "precision": prec, "lengths": f"input {isl}", "batch": "1",
                       "engine": "TensorRT-LLM 0.5 (gptSessionBenchmark)", "form_factor": "not stated (SXM assumed)",
                       "power_limit": "not stated"})))
    return TRTLLM_05_LATENCY.sets(out)


TRTLLM_BLOG = _Source(
    "trtllm-v0.5-h100-vs-a100-blog", "2023-10-01T00:00:00Z",
    "NVIDIA TensorRT-LLM, docs/source/blogs/H100vsA100.md at commit 15ed780, 'H100 has 4.6x A100 Performance in "
    "TensorRT-LLM, achieving 10,000 tok/s at 100ms to first token', table 'Max Throughput & Min Latency' "
    "('FP8 H100, FP16 A100, SXM 80GB GPUs, TP1, ISL/OSL's provided, TensorRT-LLM v0.5.0., TensorRT 9.1')",
    "https://github.com/NVIDIA/TensorRT-LLM/blob/15ed78097ea2c14b3831ca017935a32dec54476e/docs/source/blogs/"
    "H100vsA100.md",
    "GPT-J 6B; the table's own 'Speedup' row prints 2.4x for batch-1 throughput where 185 / 111 = 1.67 (the "
    "figures are copied, not the speedup); created_at is a placeholder (TensorRT-LLM v0.5.0, autumn 2023)",
    {"h100-sxm-80gb": "NVIDIA H100 SXM 80GB (FP8)", "a100-sxm-80gb": "NVIDIA A100 SXM 80GB (FP16)"},
)
# batch -> ((H100 tok/s, H100 TTFT ms), (A100 tok/s, A100 TTFT ms))
TRTLLM_BLOG_GPTJ: dict[int, tuple[tuple[float, float], tuple[float, float]]] = {
    64: ((10907, 102), (3679, 481)),
    1: ((185, 7.1), (111, 12.5)),
}


def trtllm_blog_sets() -> dict[str, ResultSet]:
    out: dict[str, list[CaseResult]] = {}
    for batch, sides in TRTLLM_BLOG_GPTJ.items():
        osl = 128 if batch == 64 else None
        for slug, prec, (tps, ttft) in (("h100-sxm-80gb", "fp8", sides[0]), ("a100-sxm-80gb", "fp16", sides[1])):
            gpu = "H100" if prec == "fp8" else "A100"
            out.setdefault(slug, []).append(_figure(
                "generate", latency_params("gpt-j-6b", prec, batch, 128, osl, "0.5.0"),
                {"output_tokens_per_s": tps, "ttft_ms": ttft},
                Match("decode-b1" if batch == 1 else "decode-b32", "own workload",
                      f"rows '{gpu}', 'GPT-J 6B', batch size {batch}, input 128, output {osl or '-'}: "
                      f"throughput {tps:,g} out tok/s, 1st token latency {ttft:g} ms",
                      {"model": "GPT-J 6B", "precision": prec, "lengths": f"128/{osl or 'not stated'}",
                       "batch": str(batch) + (" (max throughput: the largest batch of 1..64 that ran)" if batch == 64
                                              else ""),
                       "engine": "TensorRT-LLM 0.5.0, TensorRT 9.1", "form_factor": "SXM 80GB",
                       "power_limit": "not stated"})))
    return TRTLLM_BLOG.sets(out)


# -- MLPerf Inference v3.1: one submitter's A100 and H100 systems of one chassis ----------------------

MLPERF_31 = _Source(
    "mlperf-inference-v3.1-gptj-dell-xe9680", "2023-09-11T00:00:00Z",
    "MLCommons, mlcommons/inference_results_v3.1 at commit eaf622a, closed division, Dell PowerEdge XE9680, "
    "gptj-99 Offline: closed/Dell/results/XE9680_A100_SXM_80GBx8_TRT/ and XE9680_H100_SXM_80GBx8_TRT/ "
    "gptj-99/Offline/performance/run_1/mlperf_log_summary.txt ('Samples per second'), systems/*.json and "
    "configs/gptj/Offline/custom.py (batch and precision)",
    "https://github.com/mlcommons/inference_results_v3.1/tree/eaf622a25c00f2b4b1d2c4f5b4f430570429d24a/closed/Dell",
    "8 GPUs per system (the figure is the system's); one sample is one CNN/DailyMail article summarised; the "
    "A100 runs FP16 at batch 16, the H100 FP8 at batch 32 (the A100 has no FP8); created_at is a placeholder "
    "(the v3.1 publication, September 2023)",
    {"a100-sxm-80gb": "NVIDIA A100-SXM-80GB CTS ('NVIDIA A100-SXM4-80GB (TDP: 500W)'), 8 per system",
     "h100-sxm-80gb": "NVIDIA H100-SXM-80GB, 8 per system"},
)
# slug -> (precision, samples/s, batch, the config's line)
MLPERF_31_GPTJ: dict[str, tuple[str, float, int, str]] = {
    "a100-sxm-80gb": ("fp16", 42.3161, 16, "class XE9680_A100_SXM_80GBX8(OfflineGPUBaseConfig): gpu_batch_size = 16 "
                                            "(precision = \"fp16\" from OfflineGPUBaseConfig)"),
    "h100-sxm-80gb": ("fp8", 101.832, 32, "class XE9680_H100_SXM_80GBX8(OfflineGPUBaseConfig): gpu_batch_size = 32, "
                                          "use_fp8 = True"),
}


def mlperf_sets() -> dict[str, ResultSet]:
    out: dict[str, list[CaseResult]] = {}
    for slug, (prec, sps, batch, config) in MLPERF_31_GPTJ.items():
        params = {"model": "gpt-j-6b", "engine": "trtllm", "engine_version": "TensorRT 9.0.0",
                  "benchmark": "mlperf-inference-v3.1 gptj-99 Offline", "precision": prec, "gpus": 8}
        out[slug] = [_figure("serving", params, {"request_throughput_per_s": sps}, Match(
            "serving-max-load", "own workload", f"Samples per second: {sps:g} ({config})",
            {"model": "GPT-J 6B (gptj-99)", "precision": prec, "lengths": "CNN/DailyMail articles (MLPerf dataset)",
             "batch": str(batch), "engine": "TensorRT 9.0.0, CUDA 12.2 (NVIDIA's MLPerf harness)",
             "form_factor": MLPERF_31.gpus[slug], "power_limit": "A100: 'TDP: 500W' (the 500 W SXM4 part); H100: not "
             "stated"}))]
    return MLPERF_31.sets(out)


def a100_reference_sets() -> list[dict[str, ResultSet]]:
    """Every source's sets, each a slug -> result set map (one file per slug and suite)."""
    return [gpt_fast_sets(), torchao_sets(), mamf_sets(), trtllm_014_sets(), trtllm_05_latency_sets(),
            trtllm_blog_sets(), mlperf_sets()]
