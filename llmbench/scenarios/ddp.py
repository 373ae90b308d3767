"""ddp: data-parallel training over several GPUs of one host, one process per GPU (DDP or FSDP2), as a rank
scenario the torchrun launcher runs (rank entry `ddp_rank.train_rank`). Each case also trains bare and
wrapped on one GPU, so its scaling efficiency is against the true baseline; rank 0's step times are its
metrics. Metrics and definitions: docs/scenarios.md (`ddp`)."""

from __future__ import annotations

import statistics
from typing import Any, Literal

from pydantic import Field, field_validator

from llmbench.engines.base import TrainingEngine
from llmbench.measure.timing import StopRule
from llmbench.models.presets import known_preset
from llmbench.placement import Placement
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import (
    SCENARIOS,
    CaseContext,
    Charts,
    EngineSlot,
    RankEntry,
    RankRun,
    RankScenario,
    ScenarioParams,
)
from llmbench.scenarios.ranks import more_gpus_than_visible
from llmbench.scenarios.reading import Reading


class DDPParams(ScenarioParams):
    model: str = Field("llama-3-8b", description="architecture preset (llmbench.models.presets)")
    layers: int | None = Field(4, ge=1, description="keep the first n decoder layers; null: all")
    parallel: Literal["ddp", "fsdp"] = "ddp"
    batch_size: int = Field(4, ge=1, description="per GPU")
    seq_len: int = Field(1024, ge=2)

    _known_model = field_validator("model")(known_preset)


@SCENARIOS.register("ddp")
class DDP(RankScenario[DDPParams]):
    charts = Charts(sweep_axes=("batch_size", "seq_len"))
    Params = DDPParams
    description = ("data-parallel training through torchrun (DDP, FSDP2): samples/s on N GPUs, scaling against the "
                   "bare one-GPU model")
    headline = ("train_samples_per_s", "scaling_efficiency", "step_ms")
    # the step's time scales with compute on another GPU; the communication it exposes does not
    reading = Reading({
        m: "compute" for m in ("step_ms", "train_samples_per_s", "train_tokens_per_s")})
    rank_entry = RankEntry("llmbench.scenarios.ddp_rank", "train_rank")
    engine_slot = EngineSlot(TrainingEngine, default="hf")
    default_placement = Placement.model_validate({"gpus": 2})  # one process per GPU (CPU processes on a CPU)
    gpus_param = "gpus"

    def skip_reason(self, params: DDPParams, device: DeviceInfo) -> str | None:
        return more_gpus_than_visible(self.placement.gpus, device)

    def estimate_s(self, params: DDPParams, rule: StopRule) -> float:
        return 90.0  # N ranks, the bare baseline, and the wrapped one-GPU run: three torchrun starts

    def rank_runs(self, params: DDPParams, ctx: CaseContext) -> list[RankRun]:
        """The case's launches: its N ranks under the wrapper, the bare model
        on one process (`wrapper` "none": the true one-GPU baseline), and (N > 1) the wrapped model on one."""
        gpus = self.placement.gpus
        ctx.info["config"] = {**params.model_dump(mode="json"), "gpus": gpus}

        def spec(wrapper: str) -> dict[str, Any]:
            return {"model": params.model, "layers": params.layers, "wrapper": wrapper,
                    "batch_size": params.batch_size, "seq_len": params.seq_len, "device": ctx.device.kind,
                    "warmup": ctx.rule.warmup_iters, "steps": ctx.rule.min_iters}

        return [RankRun("ranks", gpus, spec(params.parallel), nnodes=self.placement.nodes),
                RankRun("bare", 1, spec("none")),
                *([RankRun("one_gpu", 1, spec(params.parallel))] if gpus > 1 else [])]

    def collect(self, params: DDPParams, ctx: CaseContext, outputs: dict[str, list[dict[str, Any]]]) -> None:
        """The case's metrics from its launches' outputs (launch name -> the ranks' dicts, rank 0 first)."""
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
        record_code_path(ctx, ranks)
        if "exposed_comm_s" in rank0:
            ctx.record_value("exposed_comm_ms", rank0["exposed_comm_s"] * 1e3)
            ctx.info["rank_exposed_comm_ms"] = {r["rank"]: r["exposed_comm_s"] * 1e3 for r in ranks}
            ctx.info["rank_no_sync_step_ms"] = {r["rank"]: [s * 1e3 for s in r["no_sync_step_s"]] for r in ranks}
        n_rate = global_batch / statistics.median(rank0["step_s"])
        bare = outputs["bare"][0]
        bare_rate = params.batch_size / statistics.median(bare["step_s"])
        ctx.info["bare_one_gpu_samples_per_s"] = bare_rate
        ctx.info["bare_one_gpu_step_ms"] = [s * 1e3 for s in bare["step_s"]]
        ctx.code_path["baseline"] = bare["code_path"]["wrapper"]
        one_rate = n_rate  # at N = 1 the case's own run is the wrapped one-GPU run
        if "one_gpu" in outputs:
            one = outputs["one_gpu"][0]
            one_rate = params.batch_size / statistics.median(one["step_s"])
            ctx.info["one_gpu_samples_per_s"] = one_rate
            ctx.info["one_gpu_step_ms"] = [s * 1e3 for s in one["step_s"]]
            ctx.info["wrapped_scaling_efficiency"] = scaling_efficiency(n_rate, gpus, one_rate)
        ctx.record_value("wrapper_cost", bare_rate / one_rate - 1)
        efficiency = scaling_efficiency(n_rate, gpus, bare_rate)
        note = above_linear_note(efficiency, gpus, n_rate, bare_rate, one_rate)
        ctx.record_value("scaling_efficiency", efficiency, [note] if note else None)
        if note:
            ctx.info.setdefault("notes", []).append(note)


def scaling_efficiency(n_rate: float, gpus: int, one_rate: float) -> float:
    """(samples/s on `gpus` GPUs) / (gpus x samples/s on one): 1 is linear scaling. The case's metric
    divides by the bare one-GPU rate (no wrapper), the user's alternative to the N GPUs."""
    return n_rate / (gpus * one_rate)


def above_linear_note(efficiency: float, gpus: int, n_rate: float, bare_rate: float, wrapped_rate: float) -> str | None:
    """The flag of an efficiency above 1, stating what was measured; None at or below 1."""
    if efficiency <= 1:
        return None
    return (f"scaling_efficiency {efficiency:.3f} is above 1: the {gpus}-GPU run trained {n_rate:.4g} samples/s, "
            f"more than {gpus} x the bare one-GPU rate of {bare_rate:.4g} samples/s ({gpus * bare_rate:.4g}); "
            f"the wrapped one-GPU rate was {wrapped_rate:.4g} samples/s. Each rate is the per-step batch over "
            "the median step time of its run's rank 0 (info: rank_step_ms, bare_one_gpu_step_ms, one_gpu_step_ms)")


def record_code_path(ctx: CaseContext, ranks: list[dict[str, Any]]) -> None:
    """Rank 0's code path as the case's, every rank's in info.rank_code_path, and whether they agree."""
    paths = {r["rank"]: r["code_path"] for r in ranks}
    ctx.info["rank_code_path"] = paths
    ctx.code_path.update(ranks[0]["code_path"])
    ctx.code_path["same_on_every_rank"] = all(p == ranks[0]["code_path"] for p in paths.values())
