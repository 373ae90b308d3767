"""Published H100-vs-A100 claims that give only a ratio (no figure of either side), stored as such in
results/published/h100-vs-a100-ratios.json: the seed write-up's findings (its tables are images; its
text gives ratios) and the vendor statements it quotes.

A claim is "about" a value, a "range", or "up to" a value (a maximum over the source's cases); it
names the pair of GPUs and precisions it compares, the answer's workload it informs (None: none of
llmbench's headline workloads) and the sentence it was copied from, with an English rendering where
the source is not in English.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from llmbench.results import write_atomic

RATIOS_FILE = "h100-vs-a100-ratios.json"
CLAIM_KINDS = ("about", "range", "up to")

SEED = ("Habr, 2024, 'Тестирование H100 vs A100 в трейне и инференсе Llama 3, погружение в FP8 и пробы движка "
        "TensorRT-LLM' (prices 'as of June 2024'); llmbench seeds/004, SEEDS.md section 5")
SEED_PAIR = "H100 80GB PCIe vs A100 80GB PCIe, identical cloud hosts (Xeon Gold 6336Y), immers.cloud"
PCIE_PAIR = ("h100-pcie-80gb", "a100-pcie-80gb")
SXM_PAIR = ("h100-sxm-80gb", "a100-sxm-80gb")
NVIDIA_BLOG = ("NVIDIA TensorRT-LLM, docs/source/blogs/H100vsA100.md at commit 15ed780 (TensorRT-LLM v0.5.0), "
               "quoted by the seed write-up's section 12")
NVIDIA_BLOG_URL = ("https://github.com/NVIDIA/TensorRT-LLM/blob/15ed78097ea2c14b3831ca017935a32dec54476e/docs/"
                   "source/blogs/H100vsA100.md")


@dataclass(frozen=True)
class PublishedRatio:
    key: str
    workload: str | None  # the answer's workload key (analysis/a100.py), None: no headline workload
    kind: str  # "about", "range" or "up to"
    low: float  # the ratio (about, up to) or the range's low end; > 1: the H100 is faster
    high: float  # equal to low except for a range
    faster: str  # the H100 side: GPU and precision, as the source compares them
    slower: str  # the A100 side
    same_precision: bool
    pair: tuple[str, str] | None  # (H100 slug, A100 slug) where the source names the GPUs; None: no GPU pair
    quote: str  # as printed
    english: str  # the quote in English ('' where it is English)
    conditions: str  # what was run, as far as the source says
    citation: str
    url: str | None = None

    @property
    def point(self) -> float:
        """One figure for the claim: the value, or a range's geometric middle."""
        return (self.low * self.high) ** 0.5

    def text(self) -> str:
        if self.kind == "range":
            return f"{self.low:.2f}-{self.high:.2f}x"
        return f"{'up to ' if self.kind == 'up to' else '~'}{self.low:.2f}x"


CLAIMS: tuple[PublishedRatio, ...] = (
    PublishedRatio(
        "seed-qlora-70b", "qlora-70b", "about", 1.25, 1.25, "h100-pcie-80gb bf16 (QLoRA nf4)",
        "a100-pcie-80gb bf16 (QLoRA nf4)", True, PCIE_PAIR,
        "В таблице ниже представлены результаты Fine-tuning модели Llama 3 70B с использованием Qlora в 4 бита. "
        "H100 оказался примерно на 25% быстрее.",
        "The table below shows fine-tuning Llama 3 70B with 4-bit QLoRA. The H100 was about 25% faster.",
        f"QLoRA 4-bit, Llama 3 70B, 'about 80 GB VRAM'; batch, lengths and trainer in an image; {SEED_PAIR}",
        SEED + ", section 5 'Fine-tuning Llama 3 70B'"),
    PublishedRatio(
        "seed-qlora-8b", "qlora-8b", "range", 1.10, 1.30, "h100-pcie-80gb (QLoRA)", "a100-pcie-80gb (QLoRA)", True,
        PCIE_PAIR,
        "В данном трейне скорость H100 оказалась от 10 до 30% быстрее",
        "In this training run the H100 was 10 to 30% faster",
        f"fine-tuning Llama 3 8B (the author's own training run; settings in an image); {SEED_PAIR}",
        SEED + ", section 6 'Fine-tuning Llama 3 8b'"),
    PublishedRatio(
        "seed-trainer", "trainer", "up to", 1.50, 1.50, "h100-pcie-80gb", "a100-pcie-80gb", True, PCIE_PAIR,
        "Прирост производительности h100 до 50%.",
        "The H100's gain is up to 50%.",
        "transformers scripts/benchmark/trainer-benchmark.py with run_clm.py: gpt2-medium and t5-large, batch 8, "
        "block 512, variations '|--fp16|--bf16' x '--tf32 0|--tf32 1', train_samples_per_second; "
        f"{SEED_PAIR}",
        SEED + ", section 4 (the caption of its result table)"),
    PublishedRatio(
        "seed-ollama-70b", "decode-b1", "about", 1.0, 1.0, "h100-pcie-80gb (8-bit)", "a100-pcie-80gb (8-bit)", True,
        PCIE_PAIR,
        "по которому видно, что в одиночном запросе скорость почти одинаковая",
        "which shows that for a single request the speed is almost the same",
        f"Llama 3 70B 8-bit through Ollama, one request, no tuning; {SEED_PAIR}",
        SEED + ", section 7 'Инференс LLama 3 70 8-bit через Ollama'"),
    PublishedRatio(
        "seed-geekbench", None, "about", 1.25, 1.25, "h100-pcie-80gb", "a100-pcie-80gb", True, PCIE_PAIR,
        "Geekbench CUDA - H100 на 25% мощнее A100", "Geekbench CUDA: the H100 is 25% more powerful than the A100",
        f"Geekbench CUDA score; {SEED_PAIR}", SEED + ", section 3.2"),
    PublishedRatio(
        "nvidia-trtllm-throughput", "decode-b32", "up to", 4.6, 4.6, "h100-sxm-80gb fp8", "a100-sxm-80gb fp16",
        False, SXM_PAIR,
        "TensorRT-LLM evaluated on both Hopper and Ampere shows **H100 FP8 is up to 4.6x max throughput and 4.4x "
        "faster 1st token latency than A100**.", "",
        "TensorRT-LLM v0.5.0, TensorRT 9.1, SXM 80GB, TP1, 'BS=32/64 max throughput' (swept over batch 1..64); "
        "the largest ratio over the models and lengths of the blog's charts", NVIDIA_BLOG, NVIDIA_BLOG_URL),
    PublishedRatio(
        "nvidia-trtllm-ttft", "ttft-2048", "up to", 4.4, 4.4, "h100-sxm-80gb fp8", "a100-sxm-80gb fp16", False,
        SXM_PAIR,
        "TensorRT-LLM evaluated on both Hopper and Ampere shows **H100 FP8 is up to 4.6x max throughput and 4.4x "
        "faster 1st token latency than A100**.", "",
        "TensorRT-LLM v0.5.0, batch 1 first-token latency, SXM 80GB, TP1", NVIDIA_BLOG, NVIDIA_BLOG_URL),
    PublishedRatio(
        "nvidia-mlperf-same-dtype", "serving-max-load", "about", 2.0, 2.0, "h100-sxm-80gb (same data type)",
        "a100-sxm-80gb (same data type)", True, None,
        "In the most recent MLPerf results, NVIDIA demonstrated up to 4.5x speedup in model inference performance "
        "on the NVIDIA H100 compared to previous results on the NVIDIA A100 Tensor Core GPU. Using the same data "
        "types, the H100 showed a 2x increase over the A100. Switching to FP8 resulted in yet another 2x increase "
        "in speed.", "", "MLPerf Inference (GPT-J, as the blog's context suggests; not stated), NVIDIA's "
        "submissions", NVIDIA_BLOG, NVIDIA_BLOG_URL),
    PublishedRatio(
        "nvidia-fp8-tensor-core", "fp8-linear", "about", 6.0, 6.0, "h100 fp8 tensor core", "a100 fp16 tensor core",
        False, None,
        "Тензорное ядро H100 FP8 имеет 6-кратную пропускную способность по сравнению с тензорным ядром A100 FP16.",
        "The H100's FP8 tensor core has 6 times the throughput of the A100's FP16 tensor core.",
        "a vendor statement about peak tensor-core throughput (no workload), as the seed quotes NVIDIA",
        SEED + ", section 8 (quoting NVIDIA)"),
    PublishedRatio(
        "lambda-fp8-training", None, "up to", 3.0, 3.0, "h100 fp8 (Transformer Engine)", "a100 bf16", False, None,
        "В разных публикациях, я встречал что переход на FP8 H100 ускорял трейн до 3-х раз по сравнению с A100. "
        "Пример от Lambda Lab",
        "In various publications I saw that moving to FP8 on the H100 sped training up to 3x over the A100. An "
        "example from Lambda Labs",
        "GPT-style 5B and 20B models, H100 with Transformer Engine FP8 against A100 with Transformer Engine BF16 "
        "(the chart is an image)", SEED + ", section 13 'Трейн LLM в FP8'"),
)


def write_ratios(folder: Path) -> Path:
    """(Re)write the ratio-only claims as results/published/h100-vs-a100-ratios.json."""
    path = folder / RATIOS_FILE
    payload = {"kind": "published ratios (H100 over A100; > 1: the H100 is faster)",
               "claims": [asdict(c) for c in CLAIMS]}
    write_atomic(path, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
    return path


def load_ratios(folder: Path) -> list[PublishedRatio]:
    """The claims as committed under `folder` (results/published); none where the file is absent."""
    path = folder / RATIOS_FILE
    if not path.is_file():
        return []
    claims = json.loads(path.read_text(encoding="utf-8"))["claims"]
    return [PublishedRatio(**{**c, "pair": tuple(c["pair"]) if c["pair"] else None}) for c in claims]
