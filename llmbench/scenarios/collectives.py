"""collectives: the ceiling of the GPUs' interconnect as torch.distributed's collectives reach it, one
process per GPU through torchrun, with nccl-tests' definitions (algbw, busbw, the slowest rank's time).
Metrics and definitions: docs/scenarios.md, "Collectives"."""

from __future__ import annotations

import statistics
from typing import Any, Literal

from pydantic import Field

from llmbench.errors import choices_hint
from llmbench.measure.timing import StopRule
from llmbench.placement import Placement
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import SCENARIOS, CaseContext, Charts, RankEntry, RankRun, RankScenario, ScenarioParams
from llmbench.scenarios.ranks import more_gpus_than_visible
from llmbench.scenarios.reading import Reading

Op = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]
OPS: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


def bus_factor(op: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor of `op` over `n` ranks (doc/PERFORMANCE.md, "Summary")."""
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    raise ValueError(f"unknown collective {op!r}; {choices_hint(op, OPS)}")


def message_elements(size_bytes: float, element_size: int, op: str, n: int) -> int:
    """The elements of S as the case moves them: whole elements, and for the ops that split S over the
    ranks a multiple of n (nccl-tests rounds its per-rank count down the same way)."""
    count = int(size_bytes // element_size)
    return count if op == "all_reduce" else count // n * n


class CollectivesParams(ScenarioParams):
    op: Op = "all_reduce"
    size_mib: float = Field(64.0, gt=0, description="the message size S in MiB, as nccl-tests defines it per op")
    dtype: Literal["bf16", "fp32"] = "bf16"


class CollectivesReading(Reading[CollectivesParams]):
    """A collective is bound by the interconnect, which no GPU spec ratio projects."""

    def projection_skip(self, params: CollectivesParams) -> str | None:
        return "a collective is bound by the interconnect, which the GPU spec table does not hold"


@SCENARIOS.register("collectives")
class Collectives(RankScenario[CollectivesParams]):
    charts = Charts(sweep_axes=("size_mib",))
    Params = CollectivesParams
    description = ("torch.distributed collectives through torchrun: algorithm and bus bandwidth (nccl-tests), "
                   "share of NVLink")
    headline = ("busbw_gbps", "algbw_gbps", "time_ms")
    reading = CollectivesReading()
    rank_entry = RankEntry("llmbench.scenarios.collectives_rank", "collective_rank")
    default_placement = Placement.model_validate({"gpus": 2})

    def skip_reason(self, params: CollectivesParams, device: DeviceInfo) -> str | None:
        return more_gpus_than_visible(self.placement.gpus, device)

    def estimate_s(self, params: CollectivesParams, rule: StopRule) -> float:
        return 20.0  # torchrun and NCCL start; the timed iterations are short

    def rank_runs(self, params: CollectivesParams, ctx: CaseContext) -> list[RankRun]:
        """One launch: the case's ranks (over its placement's nodes)."""
        spec = {"op": params.op, "size_bytes": params.size_mib * 2**20, "dtype": params.dtype,
                "device": ctx.device.kind, "warmup": ctx.rule.warmup_iters, "iters": ctx.rule.min_iters}
        return [RankRun("ranks", self.placement.gpus, spec, nnodes=self.placement.nodes)]

    def collect(self, params: CollectivesParams, ctx: CaseContext, outputs: dict[str, list[dict[str, Any]]]) -> None:
        """The case's metrics from its ranks' outputs (rank 0 first)."""
        ranks = outputs["ranks"]
        n, size = ranks[0]["world"], ranks[0]["bytes"]
        per_iter = [max(r["time_s"][i] for r in ranks) for i in range(len(ranks[0]["time_s"]))]
        factor = bus_factor(params.op, n)
        ctx.record("time_ms", [t * 1e3 for t in per_iter])
        ctx.record("algbw_gbps", [size / t / 1e9 for t in per_iter])
        ctx.record("busbw_gbps", [size / t / 1e9 * factor for t in per_iter])
        ctx.info["bytes"] = size
        ctx.info["bus_factor"] = factor
        ctx.info["rank_time_ms"] = {r["rank"]: [t * 1e3 for t in r["time_s"]] for r in ranks}
        ctx.code_path.update(ranks[0]["code_path"])
        ctx.code_path["same_on_every_rank"] = all(r["code_path"] == ranks[0]["code_path"] for r in ranks)
        ctx.info["rank_code_path"] = {r["rank"]: r["code_path"] for r in ranks}
        links = [r["interconnect"] for r in ranks if r["interconnect"]]
        if len(links) == len(ranks):  # every rank's GPU has a known ceiling: the slowest bounds the collective
            ceiling = min(link["gb_s_per_direction"] for link in links)
            ctx.info["interconnect"] = links[0] | {"gb_s_per_direction": ceiling}
            ctx.record_value("share_of_interconnect", size / statistics.median(per_iter) / 1e9 * factor / ceiling)
        else:
            ctx.info["interconnect"] = None
