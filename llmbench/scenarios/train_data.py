"""The batches a training case trains and evaluates on, made before any timing: the learnable
progression task (llmbench.models.synthetic) or the pydoc corpus in one fixed order with a held-out
window (llmbench.models.corpus_order), tokenized by the model's own tokenizer. torch is imported inside.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

from llmbench.engines.base import ModelRef
from llmbench.models.corpus_order import HELD_OUT_TOKENS
from llmbench.models.presets import PRESETS, get_preset
from llmbench.models.synthetic import progression_batches

Data = Literal["progression", "pydoc"]
Weights = Literal["random", "pretrained"]
HELD_OUT_SEED = 1_000  # the progression task's held-out batches: a seed no training batch uses


@dataclass
class TrainData:
    batches: list[Any]  # one tensor (batch x seq ids) per step, in training order
    held_out: list[Any]  # tensors never trained on, for the held-out loss
    record: dict[str, Any]  # what the result set keeps of the data (info.data)


def shipped_weights(model: str | None) -> str:
    """The module that ships a preset's weights and tokenizer ('' for none)."""
    return get_preset(model).weights_from if model in PRESETS else ""


def check_source(model: str, weights: str, data: str) -> None:
    """A params validator's check: pretrained weights and the pydoc corpus (its tokenizer) need a preset that
    ships them."""
    needs = [w for w, on in (("weights='pretrained'", weights == "pretrained"), ("dataset='pydoc' (the model's "
             "tokenizer)", data == "pydoc")) if on]
    if needs and not shipped_weights(model):
        ships = ", ".join(n for n, p in PRESETS.items() if p.weights_from)
        raise ValueError(f"{' and '.join(needs)} need a model that ships its weights and tokenizer ({ships}); "
                         f"{model!r} ships none")


def missing_reason(model: str, weights: str, data: str) -> str | None:
    """Why the weights or tokenizer cannot be had here (a package to install), or None."""
    if weights != "pretrained" and data != "pydoc":
        return None
    module = importlib.import_module(shipped_weights(model))
    reason = getattr(module, "missing_reason", lambda: None)()
    return None if reason is None else f"{model}: {reason}"


def tokenizer_for(model: ModelRef) -> Any:
    """The model's own tokenizer, from where its pretrained weights come from."""
    from transformers import AutoTokenizer

    from llmbench.models.build import pretrained_source

    source = pretrained_source(model.model, model.pretrained)
    if source is None:
        raise ValueError(f"{model.model or model.pretrained} has no tokenizer to cut the corpus with")
    return AutoTokenizer.from_pretrained(source)


def _stack(rows: list[list[int]], batch: int, device: str) -> list[Any]:
    import torch

    t = torch.tensor(rows, dtype=torch.int64)
    return [t[i:i + batch].to(device) for i in range(0, len(rows) - batch + 1, batch)] or [t.to(device)]


def train_data(data: str, model: ModelRef, *, vocab: int, batch: int, seq: int, steps: int, device: str,
               seed: int = 0, held_out: int = HELD_OUT_TOKENS) -> TrainData:
    """`steps` training batches and the held-out ones of `data`; for the progression task the batches
    cycle through 16 distinct ones (as the timed loops always have)."""
    if data == "progression":
        distinct = progression_batches(vocab, batch, seq, 16, seed=seed, device=device)
        held = progression_batches(vocab, batch, seq, 4, seed=seed + HELD_OUT_SEED, device=device)
        record = {"source": "progression task (llmbench.models.synthetic)", "seed": seed, "distinct_batches": 16,
                  "held_out_seed": seed + HELD_OUT_SEED, "steps": steps}
        return TrainData([distinct[i % len(distinct)] for i in range(steps)], held, record)
    if data != "pydoc":
        raise ValueError(f"unknown data {data!r}; valid: progression, pydoc")
    from llmbench.models.corpus_order import train_order

    order = train_order(tokenizer_for(model), seq_len=seq, batch=batch, steps=steps, seed=seed, held_out=held_out)
    top = max(max(max(s) for s in b) for b in order.batches)
    if top >= vocab:
        raise ValueError(f"the tokenizer gives id {top}, beyond the model's vocabulary of {vocab}")
    import torch

    batches = [torch.tensor(b, dtype=torch.int64).to(device) for b in order.batches]
    return TrainData(batches, _stack(order.held_out, batch, device), order.record)
