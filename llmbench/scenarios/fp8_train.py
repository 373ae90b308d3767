"""fp8_train: full fine-tuning of a Llama-shaped model in fp8 (torchao or Transformer Engine recipes) against
bf16 from the same seed and data, in the same case; recipe="bf16" runs the baseline alone (what runs on a
CPU). Imports no torch at import time. Metrics: docs/scenarios.md (`fp8_train`)."""

from __future__ import annotations

import statistics
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from llmbench.engines.base import ModelRef, TrainingEngine, TrainOptions
from llmbench.hardware.roofline import Bound
from llmbench.measure.timing import Measurement, StopRule
from llmbench.models.presets import known_preset
from llmbench.precision import DeviceInfo
from llmbench.scenarios import training as tr
from llmbench.scenarios.base import SCENARIOS, CaseContext, EngineSlot, Scenario, ScenarioParams


class FP8TrainParams(ScenarioParams):
    model: str = Field("llama-3-8b", description="architecture preset (llmbench.models.presets)")
    layers: int | None = Field(2, ge=1, description="keep the first n decoder layers; null: the whole model")
    recipe: Literal["bf16", "torchao-tensorwise", "torchao-rowwise", "te-delayed", "te-current"] = "torchao-tensorwise"
    batch_size: int = Field(1, ge=1)
    seq_len: int = Field(2048, ge=16)
    lr: float = Field(1e-4, gt=0)

    _known_model = field_validator("model")(known_preset)


@SCENARIOS.register("fp8_train")
class FP8Train(Scenario):
    sweep_axes = ("batch_size", "seq_len")
    Params = FP8TrainParams
    description = "fp8 training (torchao float8, Transformer Engine) against bf16 at the same seed and data"
    headline = ("speedup_vs_bf16", "train_tokens_per_s", "step_ms", "loss_diff_vs_bf16")
    bounds: ClassVar[dict[str, Bound]] = {"*": "compute"}
    engine_slot = EngineSlot(TrainingEngine, default="hf")

    def skip_reason(self, params: Any, device: DeviceInfo) -> str | None:
        from llmbench.engines.hf_train import fp8_reason

        return fp8_reason(_fp8(params.recipe), device)

    def estimate_s(self, params: Any, rule: StopRule) -> float:
        return 2 * (rule.warmup_iters + rule.min_iters) * 0.5 + 30.0

    def run(self, params: Any, ctx: CaseContext) -> None:
        ctx.info["config"] = params.model_dump(mode="json")
        # Exactly warmup_iters + min_iters steps per run, so the two loss curves cover the same steps.
        rule = ctx.rule.model_copy(update={"min_seconds": 0.0, "max_iters": ctx.rule.min_iters, "min_sample_s": 0.0})
        with tr.oom_as_result(ctx):
            ctx.progress(0.0, "bf16 baseline")
            base, base_losses, _, base_path = self._train(params, ctx, rule, "none")
            session_info: dict[str, Any] = {}
            if params.recipe == "bf16":
                run, losses, path = base, base_losses, base_path
            else:
                _free(ctx)
                ctx.progress(0.5, params.recipe)
                run, losses, session_info, path = self._train(params, ctx, rule, _fp8(params.recipe))
        ctx.info.update(session_info)
        ctx.code_path.update(path)
        if path is not base_path:
            ctx.code_path["baseline_linears"] = base_path["linears"]
        tr.record_step_metrics(ctx, run, batch=params.batch_size, seq=params.seq_len)
        tr.loss_metrics(ctx, losses)
        ctx.info["bf16_loss_curve"] = base_losses
        ctx.info["bf16_step_ms"] = [s * 1e3 for s in base.samples_s]
        if params.recipe != "bf16":
            speedup = statistics.median(base.samples_s) / statistics.median(run.samples_s)
            ctx.record_value("speedup_vs_bf16", speedup)
            k = tr.LOSS_TAIL
            diff = abs(statistics.fmean(losses[-k:]) - statistics.fmean(base_losses[-k:]))
            ctx.record_value("loss_diff_vs_bf16", diff)
            ctx.info["max_step_loss_diff_vs_bf16"] = max(abs(a - b) for a, b in zip(losses, base_losses, strict=False))

    def _train(self, params: Any, ctx: CaseContext, rule: StopRule,
               fp8: str) -> tuple[Measurement, list[float], dict[str, Any], dict[str, Any]]:
        opts = TrainOptions(method="full", dtype="bf16", fp8=fp8, layers=params.layers, lr=params.lr)
        session = ctx.engine(TrainingEngine).load_for_training(ModelRef(model=params.model), opts, ctx.device)
        saved = ctx.rule
        ctx.rule = rule
        try:
            m = tr.time_steps(session, ctx, batch=params.batch_size, seq=params.seq_len)
        finally:
            ctx.rule = saved
        losses, info, path = session.loss_history(), session.info(), session.code_path()
        session.close()
        return m, losses, info, path


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
