"""Build a model whose linear weights are quantized, one decoder layer at a time, so a model whose
bf16 weights do not fit (Llama-3-70B: 141 GB in bf16, 35 GB in nf4) is built on one GPU.

The architecture is first made on the meta device (accelerate's init_empty_weights: shapes, no
memory); then the parts outside the decoder layers (embeddings, final norm, lm_head) are made in
the compute dtype, and each decoder layer in turn is materialised on the device with random weights
and its nn.Linear modules handed to `quantize` before the next layer is made. The peak is the
quantized model plus one layer in bf16, never the whole bf16 model. `quantize` is injectable: nf4
through bitsandbytes on a GPU, a stand-in in tests on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

Quantizer = Callable[["nn.Linear"], "nn.Module"]


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The decoder layers of a transformers causal LM (model.model.layers for Llama-style models,
    transformer.h for GPT-2): the ModuleList holding most parameters."""
    from torch import nn

    lists = [m for m in model.modules() if isinstance(m, nn.ModuleList)]
    if not lists:
        raise ValueError(f"{type(model).__name__} has no ModuleList of decoder layers")
    return max(lists, key=lambda ml: sum(p.numel() for p in ml.parameters()))


def materialise(module: nn.Module, device: str | torch.device, dtype: torch.dtype, std: float,
                generator: torch.Generator | None = None, recurse: bool = True) -> None:
    """Give every meta parameter of `module` real random storage on `device`: normal(0, std) for
    matrices, ones for norm weights, zeros for biases (what the models' own init does)."""
    import torch
    from torch import nn

    mods = module.modules() if recurse else [module]
    for mod in mods:
        for name, p in list(mod.named_parameters(recurse=False)):
            if p.device.type != "meta":
                continue
            t = torch.empty(p.shape, dtype=dtype, device=device)
            if p.dim() == 1:
                t.fill_(0.0 if name == "bias" else 1.0)
            else:
                t.normal_(0.0, std, generator=generator)
            mod._parameters[name] = nn.Parameter(t, requires_grad=False)
        for name, b in list(mod.named_buffers(recurse=False)):
            if b is not None and b.device != torch.device(device):
                mod._buffers[name] = b.to(device)


def build_layerwise(config: Any, *, device: str, quantize: Quantizer, dtype: torch.dtype | None = None,
                    seed: int = 0, on_layer: Callable[[int], None] | None = None) -> nn.Module:
    """A causal LM of `config` with random weights whose decoder layers' nn.Linear modules went
    through `quantize`, built layer by layer (see the module docstring). `on_layer(i)` runs after
    layer i is quantized (progress, or a test's memory probe)."""
    import torch
    from accelerate import init_empty_weights
    from torch import nn
    from transformers import AutoModelForCausalLM

    dtype = dtype or torch.bfloat16
    with init_empty_weights():
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    std = float(getattr(config, "initializer_range", 0.02))
    gen = torch.Generator(device=device).manual_seed(seed)
    layers = decoder_layers(model)
    in_layers = {id(m) for m in layers.modules()}
    for mod in model.modules():  # embeddings, final norm, lm_head: kept in `dtype`
        if id(mod) not in in_layers:
            materialise(mod, device, dtype, std, gen, recurse=False)
    for i, layer in enumerate(layers):
        materialise(layer, device, dtype, std, gen)
        for parent in list(layer.modules()):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(parent, name, quantize(child))
        if on_layer is not None:
            on_layer(i)
    if getattr(config, "tie_word_embeddings", False):
        model.tie_weights()
    return model


def nf4_quantizer(double_quant: bool = True, compute_dtype: torch.dtype | None = None) -> Quantizer:
    """bitsandbytes nf4 (Linear4bit with Params4bit weights, quantized on the GPU as they move)."""
    import bitsandbytes as bnb
    import torch

    cdtype = compute_dtype or torch.bfloat16

    def quantize(lin: nn.Linear) -> nn.Module:
        q = bnb.nn.Linear4bit(lin.in_features, lin.out_features, bias=lin.bias is not None,
                              compute_dtype=cdtype, compress_statistics=double_quant, quant_type="nf4",
                              device="meta")
        w = bnb.nn.Params4bit(lin.weight.data, requires_grad=False, compress_statistics=double_quant,
                              quant_type="nf4", module=q)
        q.weight = w.to(lin.weight.device)  # quantizes; the bf16 tensor is freed with `lin`
        if lin.bias is not None:
            q.bias = lin.bias
        return q

    return quantize
