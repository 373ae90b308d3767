"""Fused projections for decoding: one matmul for q/k/v and one for gate/up in each decoder layer,
as gpt-fast (wqkv, w1|w3) and vLLM (QKVParallelLinear, MergedColumnParallelLinear) do.

At batch 1 a decode step is a chain of matrix-vector products, each one kernel (or two, with a
split-K reduction) that reads its weight once. Seven small products per layer leave the GPU part of
each kernel's ramp-up and tail idle, and a k or v projection of a grouped-query model (4096 x 1024
in Llama 3 8B) is too small to reach full bandwidth at all; three wider products read the same bytes
in fewer, longer kernels. The arithmetic is unchanged: each output column is the same dot product.

The model's own forward code is kept (no copy of transformers' attention to maintain): the first
projection's module is replaced by a `FusedLinear` that computes all parts and returns its own,
and the others by `Part` modules that hand out the rest, in the order the forward calls them. The
matmul inside a FusedLinear is a plain nn.Linear child, so quantizers (torchao, bitsandbytes) find
and convert it like any other linear layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import nn

# (parent attribute, projections in the order the forward calls them), for Llama-family layers:
# llama, mistral, qwen2/3, gemma, phi3-style models whose modules carry these names.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("self_attn", ("q_proj", "k_proj", "v_proj")),
    ("mlp", ("gate_proj", "up_proj")),
)


def _module_classes() -> tuple[type, type]:
    import torch
    from torch import nn

    class Stash:
        """The parts computed by a FusedLinear and not yet handed out."""

        def __init__(self) -> None:
            self.parts: list[Any] | None = None

    class FusedLinear(nn.Module):
        """Computes the concatenated projection, returns the first part and stashes the rest."""

        def __init__(self, linears: list[nn.Linear], stash: Stash) -> None:
            super().__init__()
            first = linears[0]
            bias = first.bias is not None
            self.sizes = [lin.out_features for lin in linears]
            self.inner = nn.Linear(
                first.in_features, sum(self.sizes), bias=bias, device=first.weight.device, dtype=first.weight.dtype
            )
            with torch.no_grad():
                self.inner.weight.copy_(torch.cat([lin.weight for lin in linears]))
                if bias:
                    self.inner.bias.copy_(torch.cat([lin.bias for lin in linears]))
            self.inner.weight.requires_grad_(first.weight.requires_grad)
            self.stash = stash

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            first, *rest = self.inner(x).split(self.sizes, dim=-1)
            self.stash.parts = rest
            return first

    class Part(nn.Module):
        """Hands out part `index` (1-based after the first) of the last fused projection."""

        def __init__(self, stash: Stash, index: int, last: bool, name: str) -> None:
            super().__init__()
            self.stash, self.index, self.last, self.name = stash, index, last, name

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            parts = self.stash.parts
            if parts is None:
                raise RuntimeError(f"fused projection {self.name} was called before the first projection of its group")
            out = parts[self.index - 1]
            if self.last:
                self.stash.parts = None
            return out

    FusedLinear.Stash = Stash  # type: ignore[attr-defined]
    return FusedLinear, Part


def fuse_projections(model: nn.Module) -> int:
    """Fuse q/k/v and gate/up in every layer that has them as same-input nn.Linear modules; returns
    the number of groups fused (0 for an architecture without such names, which runs unchanged)."""
    from torch import nn

    fused_cls, part_cls = _module_classes()
    fused = 0
    for module in list(model.modules()):
        for attr, names in GROUPS:
            parent = getattr(module, attr, None)
            if not isinstance(parent, nn.Module):
                continue
            linears = [getattr(parent, n, None) for n in names]
            if not all(type(lin) is nn.Linear for lin in linears):
                continue
            lins: list[nn.Linear] = linears  # type: ignore[assignment]
            if len({lin.in_features for lin in lins}) != 1 or len({lin.bias is None for lin in lins}) != 1:
                continue
            stash = fused_cls.Stash()  # type: ignore[attr-defined]
            setattr(parent, names[0], fused_cls(lins, stash))
            for i, n in enumerate(names[1:], start=1):
                setattr(parent, n, part_cls(stash, i, i == len(names) - 1, f"{attr}.{n}"))
            fused += 1
    return fused
