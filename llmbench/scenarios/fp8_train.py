"""fp8_train: full fine-tuning of a Llama-shaped model in fp8 (torchao or Transformer Engine recipes) against
bf16 from the same seed and data, in the same case; recipe="bf16" runs the baseline alone (what runs on a
CPU). Random weights on the progression task, or a preset's real weights on the pydoc corpus in one fixed
order (weights, dataset, steps), where the final-loss difference, spikes and held-out loss say whether fp8
trains as bf16 does. Imports no torch at import time. Metrics: docs/scenarios.md (`fp8_train`)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from llmbench.caseinfo import LossCurveInfo
from llmbench.engines.base import ModelRef, TrainingEngine, TrainOptions
from llmbench.measure import loss_curve as lc
from llmbench.measure.timing import Measurement, StopRule
from llmbench.models.build import make_config
from llmbench.models.corpus_order import HELD_OUT_TOKENS
from llmbench.models.presets import known_preset
from llmbench.precision import DeviceInfo
from llmbench.results import Stats
from llmbench.scenarios import training as tr
from llmbench.scenarios.base import SCENARIOS, CaseContext, Charts, EngineSlot, Scenario, ScenarioParams
from llmbench.scenarios.reading import Reading
from llmbench.scenarios.train_data import Data, TrainData, Weights, check_source, missing_reason, train_data


class FP8TrainParams(ScenarioParams):
    # the real-model fields came after result sets were published: at their defaults, not in the case id
    added_later: ClassVar[frozenset[str]] = frozenset({"weights", "dataset", "steps", "held_out_tokens"})
    model: str = Field("llama-3-8b", description="architecture preset (llmbench.models.presets)")
    layers: int | None = Field(2, ge=1, description="keep the first n decoder layers; null: the whole model")
    recipe: Literal["bf16", "torchao-tensorwise", "torchao-rowwise", "te-delayed", "te-current"] = "torchao-tensorwise"
    batch_size: int = Field(1, ge=1)
    seq_len: int = Field(2048, ge=16)
    lr: float = Field(1e-4, gt=0)
    weights: Weights = Field("random", description="random (the preset's shape) or pretrained (the weights it ships)")
    dataset: Data = Field("progression", description="progression (synthetic, learnable) or pydoc (the corpus in "
                       "one fixed order, with a held-out window)")
    steps: int | None = Field(None, ge=2, description="train exactly this many steps per run (the first "
                              "warmup_iters untimed); null: warmup_iters + min_iters")
    held_out_tokens: int = Field(HELD_OUT_TOKENS, ge=16, description="dataset = 'pydoc': the corpus's last tokens, "
                                 "kept out of training for the held-out loss")

    _known_model = field_validator("model")(known_preset)

    @model_validator(mode="after")
    def _source(self) -> FP8TrainParams:
        check_source(self.model, self.weights, self.dataset)
        return self


@SCENARIOS.register("fp8_train")
class FP8Train(Scenario[FP8TrainParams]):
    charts = Charts(sweep_axes=("batch_size", "seq_len"), loss_curve_series="recipe")
    Params = FP8TrainParams
    description = "fp8 training (torchao float8, Transformer Engine) against bf16 at the same seed and data"
    headline = ("speedup_vs_bf16", "train_tokens_per_s", "step_ms", "loss_diff_vs_bf16", "final_loss_diff_vs_bf16")
    reading = Reading({"*": "compute"})
    engine_slot = EngineSlot(TrainingEngine, default="hf")
    Info = LossCurveInfo

    def skip_reason(self, params: FP8TrainParams, device: DeviceInfo) -> str | None:
        from llmbench.engines.hf_train import fp8_reason

        return fp8_reason(_fp8(params.recipe), device) or missing_reason(params.model, params.weights, params.dataset)

    def estimate_s(self, params: FP8TrainParams, rule: StopRule) -> float:
        return 2 * tr.total_steps(tr.fixed_rule(rule, params.steps)) * 0.5 + 30.0

    def run(self, params: FP8TrainParams, ctx: CaseContext) -> None:
        ctx.info["config"] = params.model_dump(mode="json")
        # Exactly the same steps per run (bf16 and fp8) on the same batches, so their loss curves align.
        rule = tr.fixed_rule(ctx.rule, params.steps)
        ref = ModelRef(model=params.model, weights=params.weights)
        data = train_data(params.dataset, ref, vocab=int(make_config(params.model).vocab_size), batch=params.batch_size,
                          seq=params.seq_len, steps=tr.total_steps(rule), device=ctx.device.torch_device,
                          held_out=params.held_out_tokens)
        ctx.info["data"] = data.record
        with tr.oom_as_result(ctx):
            ctx.progress(0.0, "bf16 baseline")
            base = self._train(params, ctx, rule, "none", ref, data)
            if params.recipe == "bf16":
                run = base
            else:
                _free(ctx)
                ctx.progress(0.5, params.recipe)
                run = self._train(params, ctx, rule, _fp8(params.recipe), ref, data)
        ctx.info.update(run.info)
        ctx.code_path.update(run.path)
        if run is not base:
            ctx.code_path["baseline_linears"] = base.path["linears"]
        tr.record_step_metrics(ctx, run.m, batch=params.batch_size, seq=params.seq_len)
        tr.loss_metrics(ctx, run.losses)
        tr.curve_metrics(ctx, run.losses)
        for name, value in run.heldout.items():
            ctx.record_value(name, value)
        ctx.info["bf16_loss_curve"] = base.losses
        ctx.info["bf16_step_ms"] = [s * 1e3 for s in base.m.samples_s]
        if run is not base:
            self._against_bf16(ctx, run, base)

    def _against_bf16(self, ctx: CaseContext, run: Run, base: Run) -> None:
        """speedup, the loss differences (the final one with its interval), bf16's own spikes and held-out loss."""
        speedup = statistics.median(base.m.samples_s) / statistics.median(run.m.samples_s)
        ctx.record_value("speedup_vs_bf16", speedup)
        k = tr.LOSS_TAIL
        tail_diff = statistics.fmean(run.losses[-k:]) - statistics.fmean(base.losses[-k:])
        ctx.record_value("loss_diff_vs_bf16", abs(tail_diff))
        ctx.info["max_step_loss_diff_vs_bf16"] = max(abs(a - b) for a, b in zip(run.losses, base.losses, strict=False))
        diff, lo, hi, final = lc.final_diff(run.losses, base.losses)
        ctx.record_value("final_loss_diff_vs_bf16", diff)
        ctx.metrics["final_loss_diff_vs_bf16"].stats = Stats(mean=diff, ci95=[lo, hi], n=final,
                                                             ci_method=lc.interval_method(final))
        ctx.info.update(bf16_final_loss=lc.final_loss(base.losses), bf16_loss_spike_steps=lc.spikes(base.losses),
                        **{f"bf16_{k}": v for k, v in base.heldout.items()})

    def _train(self, params: FP8TrainParams, ctx: CaseContext, rule: StopRule, fp8: str, ref: ModelRef,
               data: TrainData) -> Run:
        opts = TrainOptions(method="full", dtype="bf16", fp8=fp8, layers=params.layers, lr=params.lr)
        session = ctx.engine(TrainingEngine).load_for_training(ref, opts, ctx.device)
        heldout = {}
        if params.dataset == "pydoc":  # the corpus's held-out window, in the precision the run trains in
            heldout["heldout_loss_before"] = session.eval_loss(data.held_out)
        saved = ctx.rule
        ctx.rule = rule
        try:
            m = tr.time_steps(session, ctx, batch=params.batch_size, seq=params.seq_len, batches=data.batches)
        finally:
            ctx.rule = saved
        if params.dataset == "pydoc":
            heldout["heldout_loss_after"] = session.eval_loss(data.held_out)
        run = Run(m, session.loss_history(), session.info(), session.code_path(), heldout)
        session.close()
        return run


@dataclass
class Run:
    """One training run of a case: its timings, every step's loss, what the session said and ran."""

    m: Measurement
    losses: list[float]
    info: dict[str, Any]
    path: dict[str, Any]
    heldout: dict[str, float]


def _fp8(recipe: str) -> str:
    return "none" if recipe == "bf16" else recipe


def _free(ctx: CaseContext) -> None:
    """The baseline's memory goes back before the fp8 model is built; peak memory restarts."""
    import gc

    gc.collect()
    if ctx.device.is_cuda:
        import torch

        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
