"""Learnable synthetic training data: exact sequence lengths, no tokenizer, and a task a model can
learn, so the loss curve says something (uniform random ids keep the loss at ln(vocab) forever).

Each sequence is an arithmetic progression modulo `span` (the first `span` token ids, at most the
vocabulary): a random start and a stride drawn from `strides`, so the next token is the current one
plus the stride. A model first learns that only `span` ids occur (loss ln(vocab) -> ln(span)), then
the rule itself (each token after the second is determined): the loss falls far below ln(vocab).
A small span keeps the rule learnable in tens of steps whatever the vocabulary (the lm_head still
scores the whole vocabulary, so the step's cost is the same as with any ids).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

DEFAULT_STRIDES = (1, 2, 3)
DEFAULT_SPAN = 128


def progression_batch(vocab: int, batch: int, seq: int, *, step: int = 0, seed: int = 0,
                      strides: tuple[int, ...] = DEFAULT_STRIDES, span: int = DEFAULT_SPAN,
                      device: str = "cpu") -> torch.Tensor:
    """Batch number `step` of the task (batch x seq token ids, int64): deterministic in (seed, step),
    so two runs (bf16 and fp8, say) see the same data."""
    import torch

    mod = min(span, vocab)
    g = torch.Generator(device="cpu").manual_seed(seed * 1_000_003 + step)
    start = torch.randint(0, mod, (batch, 1), generator=g)
    stride = torch.tensor(strides)[torch.randint(0, len(strides), (batch, 1), generator=g)]
    ids = (start + stride * torch.arange(seq)) % mod
    return ids.to(device)


def progression_batches(vocab: int, batch: int, seq: int, count: int, *, seed: int = 0,
                        device: str = "cpu") -> list[torch.Tensor]:
    """`count` distinct batches made up front, so making data never lands in a timed step."""
    return [progression_batch(vocab, batch, seq, step=i, seed=seed, device=device) for i in range(count)]
