"""Learnable synthetic training data: exact sequence lengths, no tokenizer, and a task a model can
learn, so the loss curve says something (uniform random ids keep the loss at ln(vocab) forever).

Each sequence is an arithmetic progression mod `vocab`: a random start and a stride drawn from
`strides`, so the next token is the current one plus the stride. A model that has learnt it predicts
every token after the second exactly; its next-token loss falls far below ln(vocab).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

DEFAULT_STRIDES = (1, 2, 3)


def progression_batch(vocab: int, batch: int, seq: int, *, step: int = 0, seed: int = 0,
                      strides: tuple[int, ...] = DEFAULT_STRIDES, device: str = "cpu") -> torch.Tensor:
    """Batch number `step` of the task (batch x seq token ids, int64): deterministic in (seed, step),
    so two runs (bf16 and fp8, say) see the same data."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed * 1_000_003 + step)
    start = torch.randint(0, vocab, (batch, 1), generator=g)
    stride = torch.tensor(strides)[torch.randint(0, len(strides), (batch, 1), generator=g)]
    ids = (start + stride * torch.arange(seq)) % vocab
    return ids.to(device)


def progression_batches(vocab: int, batch: int, seq: int, count: int, *, seed: int = 0,
                        device: str = "cpu") -> list[torch.Tensor]:
    """`count` distinct batches made up front, so making data never lands in a timed step."""
    return [progression_batch(vocab, batch, seq, step=i, seed=seed, device=device) for i in range(count)]
