"""Accuracy of a loaded model on real text, against the bf16 reference of the same weights: perplexity
over a fixed window of the corpus, KL divergence and top-1 agreement of its next-token distributions,
greedy-output agreement on fixed prompts, and accuracy on the shipped task set, each with a bootstrap
interval over sequences, prompts or items.

A model is reached through two calls any engine can offer (`Scorer`): the log-probability of each
token of a sequence given the tokens before it, and a greedy continuation. The reference's figures
(its logits on the first KL_TOKENS of the window included) are computed once, by a bf16 transformers
model on the same kind of device, and kept in the model cache for every later case (`reference`).
torch is imported inside the functions.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from llmbench.models.corpus import CorpusWindow, corpus_window
from llmbench.models.tasks import ClozeItem, load_task_set

QUALITY_VERSION = 1  # bump when what the figures are computed on or how changes (invalidates cached references)
SEQ_LEN = 512  # the window is cut into sequences of this many tokens: perplexity's bootstrap unit
KL_TOKENS = 1024  # the window's first tokens on which KL and top-1 agreement are computed (reference logits kept)
GREEDY_TOKENS = 32  # tokens generated per prompt
PROMPT_SET_VERSION = 1
PROMPTS = (
    "The capital of France is",
    "A list in Python is",
    "The three primary colours are",
    "Water boils at a temperature of",
    "To sort a list of numbers in Python, you can",
    "The largest planet in the solar system is",
    "An exception is raised when",
    "Once upon a time, there was a",
)
BOOTSTRAP = 2000
SEED = 20261122
TASK_BATCH = 32


class Scorer(Protocol):
    """What quality needs of a loaded model (GenerationSession.token_logprobs / greedy_tokens)."""

    def token_logprobs(self, seqs: list[list[int]]) -> list[list[float]]:
        """log p(token i | tokens < i) for i >= 1 of each sequence."""

    def greedy_tokens(self, prompts: list[list[int]], n: int) -> list[list[int]]:
        """`n` greedily chosen tokens after each prompt (EOS ignored)."""


@dataclass(frozen=True)
class QualityInputs:
    """The fixed inputs every case of a comparison is scored on, tokenized."""

    window: CorpusWindow
    prompts: list[list[int]]
    task_header: dict[str, Any]
    items: list[ClozeItem]
    item_ids: list[tuple[list[int], list[list[int]]]]  # per item: context ids, each choice's ids

    def sequences(self) -> list[list[int]]:
        return self.window.sequences(SEQ_LEN)

    def kl_sequences(self) -> list[list[int]]:
        return self.sequences()[: max(1, KL_TOKENS // SEQ_LEN)]

    def record(self) -> dict[str, Any]:
        """What a result set records of what the figures were computed on."""
        return {"corpus_window": {**self.window.record(), "sequence_tokens": SEQ_LEN, "kl_tokens": KL_TOKENS},
                "prompt_set": {"version": PROMPT_SET_VERSION, "prompts": len(self.prompts),
                               "greedy_tokens": GREEDY_TOKENS},
                "task_set": {**self.task_header, "items": len(self.items)}}


def quality_inputs(tokenizer: Any, offset: int = 0, tokens: int = 8192, items: int | None = None,
                   prompts: int | None = None) -> QualityInputs:
    """The window [offset, offset + tokens) of the corpus, the first `prompts` prompts and the first
    `items` task items (None: all)."""
    if tokens < SEQ_LEN:
        raise ValueError(f"the corpus window must hold at least one {SEQ_LEN}-token sequence, not {tokens} tokens")
    header, task = load_task_set()
    task = task[:items] if items is not None else task

    def enc(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    return QualityInputs(window=corpus_window(tokenizer, offset, tokens), prompts=[enc(p) for p in PROMPTS[:prompts]],
                         task_header=header, items=task,
                         item_ids=[(enc(i.context), [enc(c) for c in i.choices]) for i in task])


@dataclass
class Figures:
    """One model's raw figures on QualityInputs: what the metrics are computed from."""

    seq_nll: list[float]  # summed negative log-likelihood per sequence (nats)
    seq_tokens: list[int]  # predicted tokens per sequence
    greedy: list[list[int]]
    task_correct: list[int]  # 1 where the item's answer scored highest
    kl_logits: Any = None  # logits on kl_sequences() (engines that give them), a tensor
    extra: dict[str, Any] = field(default_factory=dict)


TaskScorer = Callable[["QualityInputs"], list[int]]  # per item, 1 where its answer scored highest


def choice_loglikelihoods(scorer: Scorer, inputs: QualityInputs) -> list[list[float]]:
    """llmbench's own task scorer: each item's choices' summed log-likelihood after its context."""
    flat = [(k, j, ctx + ch, len(ch)) for k, (ctx, chs) in enumerate(inputs.item_ids) for j, ch in enumerate(chs)]
    scores: list[list[float]] = [[0.0] * len(chs) for _, chs in inputs.item_ids]
    for start in range(0, len(flat), TASK_BATCH):
        part = flat[start:start + TASK_BATCH]
        for (k, j, _, n), lp in zip(part, scorer.token_logprobs([s for _, _, s, _ in part]), strict=True):
            scores[k][j] = float(sum(lp[-n:]))
    return scores


def answered(items: Sequence[ClozeItem], loglikelihoods: Sequence[Sequence[float]]) -> list[int]:
    """1 where an item's answer has the highest log-likelihood (the first of equal ones, as lm-eval's acc)."""
    return [int(max(range(len(ll)), key=lambda j: ll[j]) == item.answer)
            for item, ll in zip(items, loglikelihoods, strict=True)]


def evaluate(scorer: Scorer, inputs: QualityInputs, logits: Callable[[list[list[int]]], Any] | None = None,
             task: TaskScorer | None = None) -> Figures:
    """The figures of one model. `logits`: full logits of a batch of sequences, for KL and top-1. `task`:
    the task set's per-item scores by another scorer (lm-evaluation-harness); None: llmbench's own."""
    seqs = inputs.sequences()
    lps = scorer.token_logprobs(seqs)
    task_correct = task(inputs) if task is not None else answered(inputs.items,
                                                                  choice_loglikelihoods(scorer, inputs))
    return Figures(seq_nll=[-float(sum(lp)) for lp in lps], seq_tokens=[len(lp) for lp in lps],
                   greedy=scorer.greedy_tokens(inputs.prompts, GREEDY_TOKENS), task_correct=task_correct,
                   kl_logits=logits(inputs.kl_sequences()) if logits is not None else None)


# -- the reference, once ------------------------------------------------------------------------------


def reference_path(key: dict[str, Any]) -> Path:
    """Where the reference figures of `key` are kept: $LLMBENCH_MODEL_CACHE/references (default
    ~/.cache/llmbench/models/references), named by the key's hash."""
    from llmbench.models.smollm2 import CACHE_ENV

    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "llmbench" / "models") / "references"
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:20]
    return root / f"{digest}.pt"


def reference(key: dict[str, Any], compute: Callable[[], Figures]) -> tuple[Figures, str]:
    """The reference figures of `key`, read from the cache or computed (and kept) now; with how."""
    import torch

    path = reference_path(key)
    if path.is_file():
        data = torch.load(path, weights_only=False)
        if data.get("key") == key:
            return Figures(**data["figures"]), f"read from {path} (computed once for this key)"
    figs = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    kept = {**figs.__dict__, "kl_logits": None if figs.kl_logits is None else figs.kl_logits.cpu()}
    torch.save({"key": key, "figures": kept}, tmp)
    tmp.replace(path)
    return figs, f"computed by this case, kept in {path}"


# -- metrics ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """A metric's value, its per-unit samples, and its 95% bootstrap interval over `unit`."""

    value: float
    samples: list[float]
    ci95: tuple[float, float]
    unit: str  # what was resampled: "sequences", "items", "prompts"


def _bootstrap(n: int, stat: Callable[[np.ndarray], float]) -> tuple[float, float]:
    """95% percentile interval of stat(indices) over BOOTSTRAP resamples of n units (fixed seed)."""
    rng = np.random.default_rng(SEED)
    reps = np.array([stat(rng.integers(0, n, n)) for _ in range(BOOTSTRAP)])
    lo, hi = np.percentile(reps, [2.5, 97.5])
    return float(lo), float(hi)


def perplexity(figs: Figures) -> Figure:
    nll, tok = np.asarray(figs.seq_nll), np.asarray(figs.seq_tokens)

    def stat(i: np.ndarray) -> float:
        return float(np.exp(nll[i].sum() / tok[i].sum()))

    return Figure(stat(np.arange(len(nll))), list(np.exp(nll / tok)), _bootstrap(len(nll), stat), "sequences")


def compare(figs: Figures, ref: Figures) -> dict[str, Figure]:
    """Every metric of `figs` against the reference `ref` (metric name -> Figure)."""
    out = {"perplexity": perplexity(figs)}
    nll, tok, rnll = np.asarray(figs.seq_nll), np.asarray(figs.seq_tokens), np.asarray(ref.seq_nll)

    def increase(i: np.ndarray) -> float:  # paired: the same sequences on both sides
        return float(np.exp((nll[i].sum() - rnll[i].sum()) / tok[i].sum()) - 1.0)

    every = np.arange(len(nll))
    out["perplexity_increase"] = Figure(increase(every), list(np.exp((nll - rnll) / tok) - 1),
                                        _bootstrap(len(nll), increase), "sequences")
    acc, racc = np.asarray(figs.task_correct, float), np.asarray(ref.task_correct, float)
    out["task_accuracy"] = Figure(float(acc.mean()), list(acc), _bootstrap(len(acc), lambda i: float(acc[i].mean())),
                                  "items")
    out["task_accuracy_drop"] = Figure(float(racc.mean() - acc.mean()), list(racc - acc),
                                       _bootstrap(len(acc), lambda i: float(racc[i].mean() - acc[i].mean())), "items")
    shares = [_common_prefix(a, b) / max(1, len(b)) for a, b in zip(figs.greedy, ref.greedy, strict=True)]
    g = np.asarray(shares)
    out["greedy_agreement"] = Figure(float(g.mean()), shares, _bootstrap(len(g), lambda i: float(g[i].mean())),
                                     "prompts")
    if figs.kl_logits is not None and ref.kl_logits is not None:
        out.update(_logit_figures(ref.kl_logits, figs.kl_logits))
    return out


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _logit_figures(ref: Any, out: Any) -> dict[str, Figure]:
    """KL(ref || this) in nats per token, top-1 agreement and the logits' relative error, per sequence."""
    import torch

    r, o = ref.float().to(out.device), out.float()
    if r.shape != o.shape:
        raise ValueError(f"logits shapes differ: reference {tuple(r.shape)}, this case {tuple(o.shape)}")
    lr, lo = torch.log_softmax(r, -1), torch.log_softmax(o, -1)
    kl = (lr.exp() * (lr - lo)).sum(-1).clamp_min(0).mean(-1).cpu().numpy()  # per sequence
    top1 = (r.argmax(-1) == o.argmax(-1)).float().mean(-1).cpu().numpy()
    err_num = (o - r).flatten(1).norm(dim=1).cpu().numpy() ** 2
    err_den = r.flatten(1).norm(dim=1).cpu().numpy() ** 2

    def mean(x: np.ndarray) -> Callable[[np.ndarray], float]:
        return lambda i: float(x[i].mean())

    n = len(kl)
    rel = lambda i: float(np.sqrt(err_num[i].sum() / max(err_den[i].sum(), 1e-30)))  # noqa: E731
    return {"kl_divergence": Figure(float(kl.mean()), list(map(float, kl)), _bootstrap(n, mean(kl)), "sequences"),
            "top1_agreement": Figure(float(top1.mean()), list(map(float, top1)), _bootstrap(n, mean(top1)),
                                     "sequences"),
            "logits_rel_error": Figure(rel(np.arange(n)), list(map(float, np.sqrt(err_num / err_den))),
                                       _bootstrap(n, rel), "sequences")}


# -- the gate -----------------------------------------------------------------------------------------

# metric -> what its value means as a drop against the reference (all: larger is worse)
GATE_METRICS = {
    "perplexity_increase": "relative perplexity increase over the reference (0.05 = 5% higher)",
    "task_accuracy_drop": "task accuracy below the reference's, in absolute share (0.05 = 5 points)",
    "kl_divergence": "mean KL(reference || this) in nats per token",
}
DEFAULT_GATE = {"perplexity_increase": 0.05}


def gate_failures(figures: dict[str, Figure], gate: dict[str, float]) -> list[str]:
    """The gate's verdicts that fail: one line per metric whose point value exceeds its threshold."""
    out = []
    for name, limit in sorted(gate.items()):
        fig = figures.get(name)
        if fig is not None and fig.value > limit:
            out.append(f"{name} = {fig.value:.4g} exceeds the accuracy gate's {limit:g} ({GATE_METRICS[name]})")
    return out
