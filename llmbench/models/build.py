"""Build a causal LM: a preset (or a hub/local config) with random weights created directly on the
target device, or pretrained weights via from_pretrained. torch/transformers are imported inside.

Random weights are made where they will live (`with torch.device(dev)`): an 8B model builds in
seconds on a GPU, where building it on the CPU first and copying would take minutes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llmbench.models.presets import PRESETS, get_preset
from llmbench.models.shape import ModelShape

if TYPE_CHECKING:
    import torch
    from torch import nn


def make_config(model: str | None = None, pretrained: str | None = None) -> Any:
    """The transformers config of a preset, or of a hub id / local path (config only, no weights)."""
    from transformers import AutoConfig

    if pretrained is not None:
        return AutoConfig.from_pretrained(pretrained)
    if model is None:
        raise ValueError("give a model preset name or pretrained='<hub id or local path>'")
    preset = get_preset(model)
    return AutoConfig.for_model(preset.model_type, **preset.config_kwargs())


def pretrained_source(model: str | None = None, pretrained: str | None = None) -> str | None:
    """Where weights="pretrained" loads from: the hub id or local path given, else the folder of a
    preset that ships its weights (ModelPreset.weights_from, made on first use); None for neither."""
    if pretrained is not None:
        return pretrained
    if model is None or not get_preset(model).weights_from:
        return None
    import importlib

    return str(importlib.import_module(get_preset(model).weights_from).model_dir())


def build_model(
    *,
    model: str | None = None,
    pretrained: str | None = None,
    weights: str = "random",
    device: str = "cpu",
    dtype: torch.dtype | None = None,
    seed: int = 0,
) -> nn.Module:
    """A causal LM in eval mode on `device`. weights="random": built from the preset's (or the
    pretrained id's) config on the device itself; weights="pretrained": from_pretrained(pretrained), or
    of the weights a preset ships (pretrained_source)."""
    import torch
    from transformers import AutoModelForCausalLM

    dtype = dtype or torch.bfloat16
    if weights == "pretrained":
        source = pretrained_source(model, pretrained)
        if source is None:
            raise ValueError("weights='pretrained' needs pretrained='<hub id or local path>' or a preset that ships "
                             f"its weights ({', '.join(n for n, p in PRESETS.items() if p.weights_from)})")
        m = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, device_map=device)
    elif weights == "random":
        cfg = make_config(model, pretrained)
        if getattr(cfg, "is_encoder_decoder", False):
            raise ValueError(f"{model or pretrained} is an encoder-decoder model; build_model builds causal LMs "
                             "(the trainer scenario trains encoder-decoders)")
        torch.manual_seed(seed)
        with torch.device(device):
            m = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    else:
        raise ValueError(f"unknown weights {weights!r}; valid: random, pretrained")
    conv1d_to_linear(m)
    m.eval().requires_grad_(False)
    return m


def conv1d_to_linear(model: nn.Module) -> int:
    """Replace transformers' Conv1D (GPT-2's transposed linear) with nn.Linear of the same math, so
    quantizers that target nn.Linear (torchao, bitsandbytes) see every matmul. Returns the count."""
    import torch
    from torch import nn

    try:
        from transformers.pytorch_utils import Conv1D
    except ImportError:  # pragma: no cover - every supported transformers has it
        return 0
    n = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, Conv1D):
                w = child.weight  # (in, out)
                lin = nn.Linear(w.shape[0], w.shape[1], bias=child.bias is not None, device="meta")
                lin.weight = nn.Parameter(w.detach().t().contiguous(), requires_grad=False)
                if child.bias is not None:
                    lin.bias = nn.Parameter(child.bias.detach().clone(), requires_grad=False)
                with torch.no_grad():
                    setattr(parent, name, lin)
                n += 1
    return n


def shape_of(model: nn.Module) -> ModelShape:
    """Parameter counts and attention shape of a built model (its actual modules, so it also holds
    for a pretrained model without a preset). Call it before quantizing."""
    from torch import nn

    hf: Any = model  # a transformers PreTrainedModel
    cfg, out, inp = hf.config, hf.get_output_embeddings(), hf.get_input_embeddings()
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear) and m is not out)
    lm_head = out.weight.numel() if out is not None else 0
    tied = out is not None and out.weight is inp.weight
    heads = int(cfg.num_attention_heads)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return ModelShape(
        layers=int(cfg.num_hidden_layers),
        hidden=int(cfg.hidden_size),
        heads=heads,
        kv_heads=int(getattr(cfg, "num_key_value_heads", None) or heads),
        head_dim=int(head_dim),
        linear_params=int(linear),
        lm_head_params=int(lm_head),
        embedding_params=0 if tied else int(inp.weight.numel()),
    )


def shape_of_config(cfg: Any) -> ModelShape:
    """The shape of the model a transformers config describes, from a weightless copy on the meta
    device (no memory, any architecture): for engines that load the model themselves."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        return shape_of(AutoModelForCausalLM.from_config(cfg))


def max_positions(model: nn.Module) -> int | None:
    cfg: Any = model.config
    return getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)


def synthetic_ids(vocab: int, batch: int, length: int, device: str, seed: int = 0) -> torch.Tensor:
    """Token ids drawn uniformly from the vocabulary: exact length, reproducible, no tokenizer."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(0, vocab, (batch, length), generator=g).to(device)
