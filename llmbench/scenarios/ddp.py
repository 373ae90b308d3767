"""ddp: data-parallel training over several GPUs of one host, one process per GPU: DDP or FSDP2
(fully_shard). A rank scenario: it declares its rank entry (ddp_rank.train_rank) and its launches — N
ranks, then one for the one-GPU baseline — and the harness's torchrun launcher starts them and hands
back their outputs (harness/launchers/torchrun.py). It reports samples/s on 1 and N GPUs and the
scaling efficiency (samples/s on N) / (N x samples/s on 1). The case stays one case: rank 0's step
times are its metrics, every rank's are in the info. A case asking for more GPUs than are visible is
skipped. On a CPU the ranks are CPU processes over gloo (the launcher path, tested with two)."""

from __future__ import annotations

import statistics
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from llmbench.engines.base import TrainingEngine
from llmbench.hardware.roofline import Bound
from llmbench.measure.timing import StopRule
from llmbench.models.presets import known_preset
from llmbench.placement import Placement
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import SCENARIOS, CaseContext, EngineSlot, RankEntry, RankRun, RankScenario, ScenarioParams


class DDPParams(ScenarioParams):
    model: str = Field("llama-3-8b", description="architecture preset (llmbench.models.presets)")
    layers: int | None = Field(4, ge=1, description="keep the first n decoder layers; null: all")
    parallel: Literal["ddp", "fsdp"] = "ddp"
    batch_size: int = Field(4, ge=1, description="per GPU")
    seq_len: int = Field(1024, ge=2)

    _known_model = field_validator("model")(known_preset)


@SCENARIOS.register("ddp")
class DDP(RankScenario):
    sweep_axes = ("batch_size", "seq_len")
    Params = DDPParams
    description = "data-parallel training through torchrun (DDP, FSDP2): samples/s on 1 and N GPUs, scaling"
    headline = ("train_samples_per_s", "scaling_efficiency", "step_ms")
    bounds: ClassVar[dict[str, Bound]] = {"*": "compute"}
    rank_entry = RankEntry("llmbench.scenarios.ddp_rank", "train_rank")
    engine_slot = EngineSlot(TrainingEngine, default="hf")
    default_placement = Placement.model_validate({"gpus": 2})  # one process per GPU (CPU processes on a CPU)
    gpus_param = "gpus"

    def skip_reason(self, params: Any, device: DeviceInfo) -> str | None:
        gpus = self.placement.gpus
        if device.is_cuda:
            import torch

            visible = torch.cuda.device_count()
            if gpus > visible:
                return f"the case asks for {gpus} GPUs; {visible} visible here (CUDA_VISIBLE_DEVICES / --gpus)"
        return None

    def estimate_s(self, params: Any, rule: StopRule) -> float:
        return 60.0

    def rank_runs(self, params: Any, ctx: CaseContext) -> list[RankRun]:
        """The case's N ranks, then (N > 1) one rank of the same per-GPU batch: the one-GPU baseline."""
        gpus = self.placement.gpus
        ctx.info["config"] = {**params.model_dump(mode="json"), "gpus": gpus}
        spec = {"model": params.model, "layers": params.layers, "parallel": params.parallel,
                "batch_size": params.batch_size, "seq_len": params.seq_len, "device": ctx.device.kind,
                "warmup": ctx.rule.warmup_iters, "steps": ctx.rule.min_iters}
        return [RankRun("ranks", gpus, spec), *([RankRun("one_gpu", 1, spec)] if gpus > 1 else [])]

    def collect(self, params: Any, ctx: CaseContext, outputs: dict[str, list[dict[str, Any]]]) -> None:
        gpus = self.placement.gpus
        ranks = outputs["ranks"]
        rank0 = ranks[0]
        ctx.record("step_ms", [s * 1e3 for s in rank0["step_s"]])
        global_batch = params.batch_size * gpus
        ctx.record("train_samples_per_s", [global_batch / s for s in rank0["step_s"]])
        ctx.record("train_tokens_per_s", [global_batch * params.seq_len / s for s in rank0["step_s"]])
        ctx.info["rank_step_ms"] = {r["rank"]: [s * 1e3 for s in r["step_s"]] for r in ranks}
        ctx.info["loss_curve"] = rank0["losses"]
        if rank0["peak_memory_gib"] is not None:
            ctx.record_value("peak_memory_gib", max(r["peak_memory_gib"] for r in ranks))
        if "one_gpu" in outputs:
            one = outputs["one_gpu"][0]
            n_rate = global_batch / statistics.median(rank0["step_s"])
            one_rate = params.batch_size / statistics.median(one["step_s"])
            ctx.record_value("scaling_efficiency", n_rate / (gpus * one_rate))
            ctx.info["one_gpu_samples_per_s"] = one_rate
            ctx.info["one_gpu_step_ms"] = [s * 1e3 for s in one["step_s"]]
