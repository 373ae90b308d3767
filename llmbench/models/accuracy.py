"""Accuracy beside speed: how far a precision's logits are from the bf16 reference of the same
weights and inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def logits_agreement(ref: torch.Tensor, out: torch.Tensor) -> dict[str, float]:
    """`logits_rel_error` = ||out - ref|| / ||ref||, `kl_divergence` = mean KL(ref || out) of the
    next-token distributions, `top1_agreement` = share of positions with the same argmax."""
    import torch

    if ref.shape != out.shape:
        raise ValueError(f"logits shapes differ: reference {tuple(ref.shape)}, this run {tuple(out.shape)}")
    r, o = ref.float(), out.float()
    logp_r = torch.log_softmax(r, dim=-1)
    logp_o = torch.log_softmax(o, dim=-1)
    kl = (logp_r.exp() * (logp_r - logp_o)).sum(-1).mean()
    return {
        "logits_rel_error": float((o - r).norm() / r.norm().clamp_min(1e-30)),
        "kl_divergence": float(kl.clamp_min(0.0)),
        "top1_agreement": float((r.argmax(-1) == o.argmax(-1)).float().mean()),
    }
