"""Apply a precision to a bf16 Hugging Face model, in place: one function per method and a table
from precision name to function (llmbench.precision says what each needs and where it runs).

The output projection (lm_head) stays at activation precision in every scheme, as transformers'
bitsandbytes and torchao integrations do by default; the roofline counts it that way too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llmbench.errors import choices_hint

if TYPE_CHECKING:  # the engines package is imported to list engines: no torch at import time
    from torch import nn

Apply = Callable[["nn.Module"], "nn.Module"]


def block_linears(model: nn.Module) -> Callable[[nn.Module, str], bool]:
    """A torchao filter_fn: every nn.Linear except the output embedding."""
    from torch import nn

    get_out: Any = getattr(model, "get_output_embeddings", None)
    out = get_out() if callable(get_out) else None
    return lambda m, fqn: isinstance(m, nn.Linear) and m is not out


def _float(model: nn.Module, tf32: bool) -> nn.Module:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    return model.to(torch.float32)


def apply_fp32(model: nn.Module) -> nn.Module:
    return _float(model, tf32=False)


def apply_tf32(model: nn.Module) -> nn.Module:
    return _float(model, tf32=True)


def apply_fp16(model: nn.Module) -> nn.Module:
    import torch

    return model.to(torch.float16)


def apply_bf16(model: nn.Module) -> nn.Module:
    import torch

    return model.to(torch.bfloat16)


def _torchao(model: nn.Module, make_config: Callable[[Any], Any]) -> nn.Module:
    import torchao.quantization as ao

    ao.quantize_(model, make_config(ao), filter_fn=block_linears(model))
    return model


def apply_fp8(model: nn.Module) -> nn.Module:
    """float8 e4m3 weights and dynamically scaled activations, per-row scales (torch._scaled_mm)."""
    return _torchao(model, lambda ao: ao.Float8DynamicActivationFloat8WeightConfig(granularity=ao.PerRow()))


def apply_fp8_wo(model: nn.Module) -> nn.Module:
    return _torchao(model, lambda ao: ao.Float8WeightOnlyConfig())


def apply_int8(model: nn.Module) -> nn.Module:
    return _torchao(model, lambda ao: ao.Int8WeightOnlyConfig())


def apply_int4(model: nn.Module) -> nn.Module:
    """Group size 128, tinygemm layout (aten._weight_int4pack_mm, in core PyTorch): the default
    "plain" layout needs the separate mslk/fbgemm kernels package."""
    return _torchao(model, lambda ao: ao.Int4WeightOnlyConfig(group_size=128, int4_packing_format="tile_packed_to_4d"))


def _replace_linears(model: nn.Module, make: Callable[[nn.Linear], nn.Module]) -> nn.Module:
    from torch import nn

    keep = block_linears(model)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear) and keep(child, name):
                setattr(parent, name, make(child))
    return model


def _bnb_4bit(model: nn.Module, quant_type: str) -> nn.Module:
    """Swap each block linear for bnb Linear4bit; Params4bit quantizes on `.to(device)` even when
    the bf16 weight already lives on the GPU (random weights are built there)."""
    import bitsandbytes as bnb
    import torch

    def make(lin: nn.Linear) -> nn.Module:
        dev = lin.weight.device
        new = bnb.nn.Linear4bit(
            lin.in_features,
            lin.out_features,
            bias=lin.bias is not None,
            compute_dtype=torch.bfloat16,
            quant_type=quant_type,
            quant_storage=torch.uint8,
            device="meta",
        )
        new.weight = bnb.nn.Params4bit(
            lin.weight.data, requires_grad=False, quant_type=quant_type, quant_storage=torch.uint8, module=new
        ).to(dev)
        new.bias = lin.bias
        return new

    return _replace_linears(model, make)


def apply_nf4(model: nn.Module) -> nn.Module:
    return _bnb_4bit(model, "nf4")


def apply_fp4(model: nn.Module) -> nn.Module:
    return _bnb_4bit(model, "fp4")


def apply_llm_int8(model: nn.Module) -> nn.Module:
    """LLM.int8(): int8 weights, fp16 outlier columns above threshold 6 (the paper's default).
    Int8Params quantizes when moved from the host, so each weight takes a round trip via the CPU."""
    import bitsandbytes as bnb

    def make(lin: nn.Linear) -> nn.Module:
        dev = lin.weight.device
        new = bnb.nn.Linear8bitLt(
            lin.in_features,
            lin.out_features,
            bias=lin.bias is not None,
            has_fp16_weights=False,
            threshold=6.0,
            device="meta",
        )
        new.weight = bnb.nn.Int8Params(lin.weight.data.cpu(), requires_grad=False, has_fp16_weights=False).to(dev)
        new.bias = lin.bias
        return new

    return _replace_linears(model, make)


APPLY: dict[str, Apply] = {
    "fp32": apply_fp32,
    "tf32": apply_tf32,
    "fp16": apply_fp16,
    "bf16": apply_bf16,
    "fp8": apply_fp8,
    "fp8-wo": apply_fp8_wo,
    "int8": apply_int8,
    "int4": apply_int4,
    "nf4": apply_nf4,
    "fp4": apply_fp4,
    "llm-int8": apply_llm_int8,
}


# How each precision is applied, as a case's code path records it (what ran, not what was asked).
METHOD: dict[str, str] = {
    "fp32": "fp32 weights and matmuls (tf32 off)",
    "tf32": "fp32 weights, tf32 matmuls",
    "fp16": "fp16 weights",
    "bf16": "bf16 weights",
    "fp8": "torchao Float8DynamicActivationFloat8WeightConfig(PerRow): e4m3 weights quantized once, "
           "activations scaled per call, torch._scaled_mm",
    "fp8-wo": "torchao Float8WeightOnlyConfig: e4m3 weights, bf16 matmuls",
    "int8": "torchao Int8WeightOnlyConfig",
    "int4": "torchao Int4WeightOnlyConfig(group_size=128, tile_packed_to_4d): tinygemm",
    "nf4": "bitsandbytes Linear4bit nf4, bf16 compute",
    "fp4": "bitsandbytes Linear4bit fp4, bf16 compute",
    "llm-int8": "bitsandbytes Linear8bitLt (LLM.int8(), threshold 6)",
}


def apply_precision(model: nn.Module, precision: str) -> nn.Module:
    """Convert a bf16 model to `precision` (in place where the method allows); returns the model."""
    try:
        fn = APPLY[precision]
    except KeyError:
        hint = choices_hint(precision, APPLY)
        raise KeyError(f"the hf engine has no method for precision {precision!r}; {hint}") from None
    return fn(model)
