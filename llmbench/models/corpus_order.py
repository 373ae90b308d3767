"""One fixed order of training batches over the pydoc corpus (llmbench.models.corpus), with a held-out
window the training never sees: the same token batches for every precision, so their loss curves
differ only by how they compute.

The tokenized corpus is cut into whole sequences of `seq_len` tokens; the last `held_out` tokens
(whole sequences) are kept out for evaluation; the rest are shuffled once per epoch with a fixed seed
and taken `batch` at a time. A run longer than one epoch sees each sequence again (the record says how
many epochs). Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from llmbench.models.corpus import CorpusWindow, corpus_window

HELD_OUT_TOKENS = 8192  # the corpus's last tokens, never trained on


@dataclass(frozen=True)
class TrainOrder:
    """`steps` batches of `batch` sequences of token ids, in the order they are trained on."""

    batches: list[list[list[int]]]
    held_out: list[list[int]]  # the held-out window's sequences
    record: dict[str, Any]  # what a result set keeps of the order (enough to make it again and check it)


def _tokens_sha256(batches: list[list[list[int]]]) -> str:
    h = hashlib.sha256()
    for b in batches:
        for seq in b:
            h.update(b",".join(str(t).encode() for t in seq))
            h.update(b";")
    return h.hexdigest()


def train_order(tokenizer: Any, *, seq_len: int, batch: int, steps: int, seed: int = 0,
                held_out: int = HELD_OUT_TOKENS) -> TrainOrder:
    """The order of module docstring for `tokenizer` (a transformers tokenizer); an error where the corpus
    leaves fewer than `batch` training sequences or no held-out sequence."""
    import numpy as np

    if seq_len < 2 or batch < 1 or steps < 1:
        raise ValueError(f"seq_len must be >= 2, batch and steps >= 1; got {seq_len}, {batch}, {steps}")
    probe = corpus_window(tokenizer, 0, 2)
    total = probe.corpus_tokens
    held = (held_out // seq_len) * seq_len
    if held < seq_len:
        raise ValueError(f"held_out={held_out} tokens hold no sequence of seq_len={seq_len}")
    train_tokens = ((total - held) // seq_len) * seq_len
    if train_tokens < batch * seq_len:
        raise ValueError(f"the corpus has {total} tokens: after {held} held out, fewer than batch={batch} sequences "
                         f"of {seq_len} tokens are left to train on")
    train: CorpusWindow = corpus_window(tokenizer, 0, train_tokens)
    evals = corpus_window(tokenizer, total - held, held)
    seqs = train.sequences(seq_len)
    rng = np.random.default_rng(seed)
    order: list[int] = []
    while len(order) < steps * batch:
        order.extend(int(i) for i in rng.permutation(len(seqs)))
    order = order[:steps * batch]
    batches = [[seqs[i] for i in order[s * batch:(s + 1) * batch]] for s in range(steps)]
    record = {
        "corpus": train.record(),
        "held_out": evals.record(),
        "seq_len": seq_len, "batch_size": batch, "steps": steps, "shuffle_seed": seed,
        "train_sequences": len(seqs),
        "epochs": round(steps * batch / len(seqs), 3),
        "order": "a permutation of the training sequences per epoch (numpy default_rng(shuffle_seed))",
        "tokens_sha256": _tokens_sha256(batches),  # of every step's token ids in order: equal for equal data
    }
    return TrainOrder(batches=batches, held_out=evals.sequences(seq_len), record=record)
