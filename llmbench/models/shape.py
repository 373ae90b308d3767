"""What the roofline and the FLOP counts need to know of a model's architecture: no torch here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelShape:
    """What the roofline needs of a model. `linear_params` are the transformer blocks' matmul
    weights (quantized by weight-only schemes); lm_head stays at activation precision."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    linear_params: int
    lm_head_params: int
    embedding_params: int  # an untied input embedding (0 when tied to lm_head); decode reads a row

    @property
    def params(self) -> int:
        return self.linear_params + self.lm_head_params + self.embedding_params

    def kv_bytes_per_token(self, elem_bytes: int) -> int:
        """K and V of one token across all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim * elem_bytes
