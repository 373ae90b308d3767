"""FLOPs of a training step, for MFU. No torch here."""

from __future__ import annotations


def train_flops(*, trainable: int, frozen: int, layers: int, hidden: int, seq: int, tokens: int,
                recompute: bool = False) -> float:
    """Model FLOPs of one training step over `tokens` tokens of sequences of length `seq`:

        6 * trainable * tokens        forward (2N), input-grad backward (2N), weight-grad (2N)
      + 4 * frozen * tokens           forward (2N) and input-grad backward (2N); frozen weights get no grad
      + 12 * layers * hidden * seq * tokens
                                      attention scores QK^T and values AV: 2 matmuls x 2 FLOPs x
                                      hidden x seq per token and layer forward (4), x3 with backward;
                                      the causal mask is not discounted (as PaLM's MFU and Megatron count)

    `trainable` and `frozen` count matmul weights only (the blocks' linears and lm_head; an input
    embedding is a lookup, no FLOPs). LoRA: `trainable` is the adapters, `frozen` the base.

    With `recompute` (gradient checkpointing), the forward runs twice: + 2 * (trainable + frozen) *
    tokens + 4 * layers * hidden * seq * tokens. MFU is reported WITHOUT it (model FLOPs, the common
    definition, so checkpointing shows as a lower MFU); the hardware FLOPs with it go to the case info.
    """
    n = trainable + frozen
    flops = 6.0 * trainable * tokens + 4.0 * frozen * tokens + 12.0 * layers * hidden * seq * tokens
    if recompute:
        flops += 2.0 * n * tokens + 4.0 * layers * hidden * seq * tokens
    return flops
