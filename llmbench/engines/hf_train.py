"""Training sessions of the transformers engine: full fine-tuning, LoRA on a bf16 base, QLoRA on an
nf4 base built layer by layer (llmbench.models.quantized_build), and fp8 training (torchao float8 or
Transformer Engine's te.Linear) of a full fine-tune. Heavy packages are imported inside functions.

A step is forward + backward + optimizer update with no host synchronisation: each step's loss is
kept on the device and read by loss_history() after the timed window.
"""

from __future__ import annotations

from collections import Counter
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from llmbench.engines.base import ModelRef, TrainingSession, TrainOptions
from llmbench.errors import choices_hint
from llmbench.precision import DeviceInfo

if TYPE_CHECKING:
    from llmbench.models.shape import ModelShape

METHODS = ("qlora", "lora", "full")
OPTIMIZERS = ("adamw", "paged_adamw_8bit")
FP8_RECIPES = ("none", "torchao-tensorwise", "torchao-rowwise", "te-delayed", "te-current")
TE_INSTALL = "pip install --no-build-isolation 'transformer_engine[pytorch]'"


def fp8_reason(recipe: str, device: DeviceInfo) -> str | None:
    """Why an fp8 training recipe cannot run here (None when it can): it needs an NVIDIA GPU of
    compute capability 8.9+ and its package."""
    import importlib.util

    if recipe == "none":
        return None
    if not device.is_cuda or (device.cc or (0, 0)) < (8, 9):
        return (f"fp8 training ({recipe}) needs an NVIDIA GPU of compute capability 8.9+ (Ada, Hopper, "
                f"Blackwell); this is {device.name}")
    if recipe.startswith("torchao") and importlib.util.find_spec("torchao") is None:
        return f"fp8 training ({recipe}) needs torchao, which is not installed: pip install torchao"
    if recipe.startswith("te") and importlib.util.find_spec("transformer_engine") is None:
        return f"fp8 training ({recipe}) needs Transformer Engine, which is not installed: {TE_INSTALL}"
    return None


def load_for_training(model: ModelRef, options: TrainOptions, device: DeviceInfo) -> HFTrainingSession:
    """Build the model on `device` as `options` say, wrap it for the method, and make its optimizer."""
    import torch
    from accelerate import init_empty_weights
    from transformers import AutoModelForCausalLM

    from llmbench.models.build import conv1d_to_linear, make_config, shape_of

    if options.method not in METHODS:
        raise ValueError(f"unknown training method {options.method!r}; {choices_hint(options.method, METHODS)}")
    if options.optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {options.optimizer!r}; {choices_hint(options.optimizer, OPTIMIZERS)}")
    if options.fp8 not in FP8_RECIPES:
        raise ValueError(f"unknown fp8 recipe {options.fp8!r}; {choices_hint(options.fp8, FP8_RECIPES)}")
    if model.weights not in ("random", "pretrained"):
        raise ValueError(f"unknown weights {model.weights!r}; valid: random, pretrained")
    cfg = make_config(model.model, model.pretrained)
    if options.layers is not None:
        cfg.num_hidden_layers = options.layers
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[options.dtype]
    dev = device.torch_device
    m: Any
    with init_empty_weights():  # the architecture's counts, before quantization packs the weights
        shape = shape_of(AutoModelForCausalLM.from_config(cfg, dtype=dtype))
    info: dict[str, Any] = {"method": options.method, "optimizer": options.optimizer, "dtype": options.dtype,
                            "gradient_checkpointing": options.gradient_checkpointing, "fp8": options.fp8,
                            "weights": model.weights}
    if model.weights == "pretrained":
        m = _pretrained(model, options, dtype, dev)
        info["weights_from"] = str(m.name_or_path)
        if options.method == "qlora":
            info["nf4_double_quant"] = options.double_quant
    elif options.method == "qlora":
        from llmbench.models.quantized_build import build_layerwise, nf4_quantizer

        m = build_layerwise(cfg, device=dev, quantize=nf4_quantizer(options.double_quant, dtype), dtype=dtype,
                            seed=options.seed)
        info["nf4_double_quant"] = options.double_quant
        _mark_4bit(m)
    else:
        torch.manual_seed(options.seed)
        with torch.device(dev):
            m = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
        conv1d_to_linear(m)
    m.config.use_cache = False
    _checkpointing_on(m, options.gradient_checkpointing)
    if options.method == "full":
        m.requires_grad_(True)
    else:
        m = _add_lora(m, options)
        info.update(lora_rank=options.lora_rank, lora_alpha=options.lora_alpha,
                    target_modules=list(options.target_modules))
    autocast: Any = nullcontext
    if options.fp8 != "none":
        if options.method != "full":
            raise ValueError(f"fp8 training runs with method='full', not {options.method!r}")
        autocast, fp8_info = _apply_fp8(m, options.fp8)
        info.update(fp8_info)
    m.train()
    params = [p for p in m.parameters() if p.requires_grad]
    opt = _optimizer(options.optimizer, params, options.lr, device.is_cuda)
    return HFTrainingSession(m, opt, shape, info, autocast)


def _pretrained(model: ModelRef, options: TrainOptions, dtype: Any, dev: str) -> Any:
    """The pretrained weights (a hub id or path, or those a preset ships), the first `options.layers`
    decoder layers kept; for QLoRA quantized to nf4 as its users load it (from_pretrained with
    bitsandbytes' BitsAndBytesConfig)."""
    from transformers import AutoModelForCausalLM

    from llmbench.models.build import conv1d_to_linear, pretrained_source

    source = pretrained_source(model.model, model.pretrained)
    if source is None:
        raise ValueError(f"weights='pretrained' needs a pretrained path or a preset that ships its weights; "
                         f"{model.model!r} ships none")
    kwargs: dict[str, Any] = {}
    if options.layers is not None:
        kwargs["num_hidden_layers"] = options.layers  # the checkpoint's later layers are left unloaded
    if options.method == "qlora":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=options.double_quant,
            bnb_4bit_compute_dtype=dtype)
    m = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, device_map=dev, **kwargs)
    conv1d_to_linear(m)
    return m


def _mark_4bit(model: Any) -> None:
    """peft wraps bitsandbytes Linear4bit modules with its 4-bit LoRA layer when the model says it
    is loaded in 4 bit (what from_pretrained(quantization_config=...) sets)."""
    try:
        model.is_loaded_in_4bit = True
    except AttributeError:  # a read-only property in some transformers versions
        object.__setattr__(model, "is_loaded_in_4bit", True)


def _add_lora(model: Any, options: TrainOptions) -> Any:
    from peft import LoraConfig, get_peft_model

    if options.gradient_checkpointing:
        model.enable_input_require_grads()
    cfg = LoraConfig(r=options.lora_rank, lora_alpha=options.lora_alpha, lora_dropout=0.0, bias="none",
                     target_modules=list(options.target_modules), task_type="CAUSAL_LM")
    return get_peft_model(model, cfg)


def _optimizer(name: str, params: list[Any], lr: float, cuda: bool) -> Any:
    import torch

    if name == "paged_adamw_8bit":
        import bitsandbytes as bnb

        return bnb.optim.PagedAdamW8bit(params, lr=lr)
    return torch.optim.AdamW(params, lr=lr, fused=cuda)


def _fp8_filter(module: Any, fqn: str) -> bool:
    """fp8 for the decoder layers' linears: lm_head stays in bf16 (as torchao's and TE's recipes
    advise: its output feeds the loss), and fp8 GEMMs need dimensions divisible by 16."""
    from torch import nn

    return (isinstance(module, nn.Linear) and "lm_head" not in fqn
            and module.in_features % 16 == 0 and module.out_features % 16 == 0)


def _apply_fp8(model: Any, recipe: str) -> tuple[Any, dict[str, Any]]:
    """Swap the decoder layers' nn.Linear for fp8 training linears; returns the context the forward
    runs in (TE's fp8_autocast) and what was done."""
    if recipe.startswith("torchao"):
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        cfg = Float8LinearConfig.from_recipe_name(recipe.split("-", 1)[1])
        convert_to_float8_training(model, config=cfg, module_filter_fn=_fp8_filter)
        n = sum(type(m).__name__ == "Float8Linear" for m in model.modules())
        return nullcontext, {"fp8_linears": n}
    from llmbench.hardware.cudnn import import_transformer_engine

    te = import_transformer_engine()  # against torch's cuDNN (hardware/cudnn.py says why)
    from transformer_engine.common import recipe as te_recipe

    n = 0
    for parent_name, parent in list(model.named_modules()):
        for name, child in list(parent.named_children()):
            fqn = f"{parent_name}.{name}" if parent_name else name
            if _fp8_filter(child, fqn):
                lin = te.Linear(child.in_features, child.out_features, bias=child.bias is not None,
                                params_dtype=child.weight.dtype, device=child.weight.device)
                with __import__("torch").no_grad():
                    lin.weight.copy_(child.weight)
                    if child.bias is not None:
                        lin.bias.copy_(child.bias)
                setattr(parent, name, lin)
                n += 1
    fp8_recipe = te_recipe.DelayedScaling() if recipe == "te-delayed" else te_recipe.Float8CurrentScaling()

    def autocast() -> AbstractContextManager[Any]:
        return te.fp8_autocast(enabled=True, fp8_recipe=fp8_recipe)

    return autocast, {"fp8_linears": n, "te_recipe": type(fp8_recipe).__name__}


def _checkpointing_on(model: Any, on: bool) -> None:
    """Activation checkpointing by the name this transformers has (v5 renamed gradient checkpointing)."""
    if not on:
        return
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def _recomputes(model: Any) -> bool:
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):  # peft forwards either
        try:
            return bool(getattr(model, name))
        except AttributeError:
            continue
    return False


class HFTrainingSession(TrainingSession):
    """A transformers causal LM in training mode with its optimizer."""

    def __init__(self, model: Any, optimizer: Any, shape: ModelShape, info: dict[str, Any],
                 autocast: Any = nullcontext) -> None:
        self.model = model
        self.optimizer = optimizer
        self._shape = shape
        self._info = info
        self._autocast = autocast
        self._losses: list[Any] = []  # device tensors until loss_history() reads them
        self._trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        # an nf4 weight's numel counts packed bytes: count frozen weights from the architecture
        self._frozen = max(0, shape.params - self._trainable) if info["method"] != "full" else 0

    def step(self, batch: Any) -> None:
        with self._autocast():
            loss = self.model(input_ids=batch, labels=batch).loss
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self._losses.append(loss.detach())

    def eval_loss(self, batches: list[Any]) -> float:
        """The mean next-token loss over `batches` (each batch x seq ids), no gradients, dropout off, in
        the precision the steps run in; weighted by each batch's predicted tokens."""
        import torch

        was_training = self.model.training
        self.model.eval()
        total, count = 0.0, 0
        try:
            with torch.no_grad():
                for b in batches:
                    with self._autocast():
                        loss = self.model(input_ids=b, labels=b).loss
                    n = b.shape[0] * (b.shape[1] - 1)
                    total += float(loss.float()) * n
                    count += n
        finally:
            self.model.train(was_training)
        return total / count

    def loss_history(self) -> list[float]:
        import torch

        if not self._losses:
            return []
        return [float(x) for x in torch.stack(self._losses).float().cpu().tolist()]

    @property
    def trainable_params(self) -> int:
        return self._trainable

    @property
    def frozen_params(self) -> int:
        return self._frozen

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.vocab_size)

    def shape(self) -> ModelShape:
        return self._shape

    def info(self) -> dict[str, Any]:
        return {**self._info, "trainable_params": self._trainable, "frozen_params": self._frozen}

    def code_path(self) -> dict[str, Any]:
        """Read from the built model, not from the options: the layer classes that run (bitsandbytes'
        Linear4bit under peft's LoRA layer, torchao's Float8Linear, TE's Linear, torch's Linear)."""
        linears: Counter[str] = Counter()
        outer: list[str] = []  # a LoRA layer's own base and adapter linears are part of it
        for name, m in self.model.named_modules():
            kind = type(m).__name__
            if (kind.endswith("Linear") or kind in ("Linear4bit", "Linear8bitLt")) and not any(
                    name.startswith(o + ".") for o in outer):
                linears[f"{type(m).__module__.split('.')[0]}.{kind}"] += 1
                outer.append(name)
        path: dict[str, Any] = {
            "engine": "hf", "step": "forward + backward + optimizer.step (no host sync)",
            "linears": dict(sorted(linears.items())),
            "optimizer": type(self.optimizer).__name__ + (" (fused)" if self.optimizer.defaults.get("fused") else ""),
            "gradient_checkpointing": _recomputes(self.model),
            "attention": getattr(self.model.config, "_attn_implementation", None) or "eager",
            "dtype": self._info["dtype"],
        }
        base4 = next((m for m in self.model.modules() if type(m).__name__ == "Linear4bit"
                      and type(m).__module__.startswith("bitsandbytes")), None)
        if base4 is not None:
            w = base4.weight
            path["frozen_base"] = (f"{getattr(w, 'quant_type', '4bit')} weights, compute "
                                   f"{str(getattr(base4, 'compute_dtype', None)).removeprefix('torch.')}, double quant "
                                   f"{bool(getattr(getattr(w, 'quant_state', None), 'nested', False))}")
        if self._info.get("fp8", "none") != "none":
            path["fp8"] = self._info["fp8"] + (f" ({self._info['te_recipe']})" if "te_recipe" in self._info else "")
        return path

    def close(self) -> None:
        self.model = None
        self.optimizer = None
        self._losses = []
