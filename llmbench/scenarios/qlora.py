"""qlora: fine-tuning throughput and memory of QLoRA (nf4 base via bitsandbytes, LoRA adapters via
peft) against its baselines, plain LoRA on a bf16 base and full bf16 fine-tuning.

The model is a preset's architecture with random weights, QLoRA's base built in nf4 one decoder layer
at a time (llmbench.models.quantized_build), so the Llama-3-70B shape fits one GPU; or, with weights =
"pretrained", the weights a preset ships (smollm2-135m), loaded in nf4 by bitsandbytes for QLoRA. Data is
the learnable progression task (llmbench.models.synthetic), so train_loss falls, or the pydoc corpus in
one fixed order, whose held-out window gives the loss before and after fine-tuning. Each timed step is
one optimizer step, bracketed by CUDA events. This module imports no torch at import time.
"""

from __future__ import annotations

import importlib.util
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from llmbench.caseinfo import LossCurveInfo
from llmbench.engines.base import ModelRef, TrainingEngine, TrainOptions
from llmbench.measure.timing import StopRule
from llmbench.models.build import make_config
from llmbench.models.corpus_order import HELD_OUT_TOKENS
from llmbench.models.presets import known_preset
from llmbench.precision import DeviceInfo
from llmbench.scenarios import training as tr
from llmbench.scenarios.base import SCENARIOS, BatchSearch, CaseContext, Charts, EngineSlot, Scenario, ScenarioParams
from llmbench.scenarios.reading import Reading
from llmbench.scenarios.train_data import Data, Weights, check_source, missing_reason, train_data

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
BNB_INSTALL = "pip install 'llmbench[quant]'  (bitsandbytes)"


class QLoRAParams(ScenarioParams):
    # the real-model fields came after result sets were published: at their defaults, not in the case id
    added_later: ClassVar[frozenset[str]] = frozenset({"weights", "dataset", "steps", "held_out_tokens"})
    model: str = Field("llama-3-8b", description="architecture preset (llmbench.models.presets)")
    method: Literal["qlora", "lora", "full"] = Field(
        "qlora", description="qlora: nf4 base + LoRA; lora: bf16 base + LoRA; full: every weight in bf16")
    double_quant: bool = True
    lora_rank: int = Field(16, ge=1)
    lora_alpha: int = Field(32, ge=1)
    target_modules: tuple[str, ...] = DEFAULT_TARGETS
    gradient_checkpointing: bool = True
    optimizer: Literal["adamw", "paged_adamw_8bit"] = "adamw"
    batch_size: int = Field(1, ge=1)
    seq_len: int = Field(512, ge=2)
    layers: int | None = Field(None, ge=1, description="keep the first n decoder layers")
    lr: float = Field(1e-4, gt=0)
    max_batch: bool = Field(False, description="the runner searches the largest batch_size that fits")
    weights: Weights = Field("random", description="random (the preset's shape) or pretrained (the weights it "
                             "ships, quantized to nf4 on load for method 'qlora')")
    dataset: Data = Field("progression", description="progression (synthetic, learnable) or pydoc (the corpus in "
                       "one fixed order; held-out loss before and after)")
    steps: int | None = Field(None, ge=2, description="train exactly this many steps (the first warmup_iters "
                              "untimed); null: as the stop rule says (pydoc: warmup_iters + min_iters)")
    held_out_tokens: int = Field(HELD_OUT_TOKENS, ge=16, description="dataset = 'pydoc': the corpus's last tokens, "
                                 "kept out of training for the held-out loss")

    _known_model = field_validator("model")(known_preset)

    @model_validator(mode="after")
    def _source(self) -> QLoRAParams:
        check_source(self.model, self.weights, self.dataset)
        return self


def train_options(p: Any) -> TrainOptions:
    return TrainOptions(method=p.method, double_quant=p.double_quant, lora_rank=p.lora_rank,
                        lora_alpha=p.lora_alpha, target_modules=tuple(p.target_modules),
                        gradient_checkpointing=p.gradient_checkpointing, optimizer=p.optimizer, lr=p.lr,
                        dtype="bf16", layers=p.layers)


@SCENARIOS.register("qlora")
class QLoRA(Scenario[QLoRAParams]):
    charts = Charts(sweep_axes=("batch_size", "seq_len"), loss_curve_series="method")
    Params = QLoRAParams
    description = "QLoRA / LoRA / full fine-tuning: tokens/s, step time, MFU, memory, energy, loss"
    headline = ("train_tokens_per_s", "step_ms", "peak_memory_gib", "mfu")
    reading = Reading({"*": "compute"})
    max_batch_search = BatchSearch(axis="batch_size", flag="max_batch")
    engine_slot = EngineSlot(TrainingEngine, default="hf")
    Info = LossCurveInfo

    def skip_reason(self, params: QLoRAParams, device: DeviceInfo) -> str | None:
        if params.method != "full" and importlib.util.find_spec("peft") is None:
            return f"method {params.method!r} needs peft, which is not installed: pip install peft"
        needs_bnb = [w for w, on in (("nf4 weights (method 'qlora')", params.method == "qlora"),
                                     ("the paged_adamw_8bit optimizer", params.optimizer == "paged_adamw_8bit")) if on]
        if needs_bnb and not device.is_cuda:
            return f"{' and '.join(needs_bnb)} need bitsandbytes' CUDA kernels: an NVIDIA GPU; this is {device.name}"
        if needs_bnb and importlib.util.find_spec("bitsandbytes") is None:
            return f"{' and '.join(needs_bnb)} need bitsandbytes, which is not installed: {BNB_INSTALL}"
        return missing_reason(params.model, params.weights, params.dataset)

    def estimate_s(self, params: QLoRAParams, rule: StopRule) -> float:
        return rule.min_seconds + 30.0

    def run(self, params: QLoRAParams, ctx: CaseContext) -> None:
        ctx.info["config"] = params.model_dump(mode="json")
        ref = ModelRef(model=params.model, weights=params.weights)
        fixed = params.steps is not None or params.dataset != "progression"  # a finite order: exactly its steps
        data = None
        if fixed:
            ctx.rule = tr.fixed_rule(ctx.rule, params.steps)
            data = train_data(params.dataset, ref, vocab=int(make_config(params.model).vocab_size),
                              batch=params.batch_size, seq=params.seq_len, steps=tr.total_steps(ctx.rule),
                              device=ctx.device.torch_device, held_out=params.held_out_tokens)
            ctx.info["data"] = data.record
        with tr.oom_as_result(ctx):
            ctx.progress(0.0, f"building {params.model} for {params.method}")
            session = ctx.engine(TrainingEngine).load_for_training(ref, train_options(params), ctx.device)
            ctx.info.update(session.info())
            ctx.code_path.update(session.code_path())
            if data is not None and params.dataset == "pydoc":  # nf4 base + untrained adapters (B = 0) for qlora
                ctx.record_value("heldout_loss_before", session.eval_loss(data.held_out))
            m = tr.time_steps(session, ctx, batch=params.batch_size, seq=params.seq_len,
                              batches=None if data is None else data.batches)
            if data is not None and params.dataset == "pydoc":
                ctx.record_value("heldout_loss_after", session.eval_loss(data.held_out))
        flops = tr.step_flops(session.shape(), method=params.method, trainable=session.trainable_params,
                              batch=params.batch_size, seq=params.seq_len)
        ctx.info["flops_per_step"] = flops
        ctx.info["hardware_flops_per_step"] = tr.step_flops(
            session.shape(), method=params.method, trainable=session.trainable_params, batch=params.batch_size,
            seq=params.seq_len, recompute=params.gradient_checkpointing)
        tr.record_step_metrics(ctx, m, batch=params.batch_size, seq=params.seq_len, flops_per_step=flops)
        losses = session.loss_history()
        tr.loss_metrics(ctx, losses)
        if fixed:
            tr.curve_metrics(ctx, losses)
        session.close()
