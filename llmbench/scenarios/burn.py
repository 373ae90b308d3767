"""burn: a sustained full-load matmul for `duration_s`, like gpu-burn: throughput, SM clock, power and
temperature per interval, and a flag when throughput or clock fall from the first interval's level.

Compare with the published gpu-burn sets in references/data/published/ through `llmbench compare` (their
`tflops` is the same quantity: 2*N^3 per product over time).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from llmbench.caseinfo import TimelineInfo
from llmbench.hardware import nvml
from llmbench.measure import quiet
from llmbench.measure.monitors import open_sampler
from llmbench.measure.sustained import THROTTLE_DROP, drop, sustained_level, throttle_flags
from llmbench.measure.timing import StopRule
from llmbench.precision import DeviceInfo, device_reason
from llmbench.scenarios.base import SCENARIOS, CaseContext, Scenario, ScenarioParams
from llmbench.scenarios.reading import Reading


class BurnParams(ScenarioParams):
    precision: Literal["fp32", "tf32", "fp16", "bf16"] = "bf16"
    size: int = Field(8192, ge=16, description="N of the N x N x N product")
    duration_s: float = Field(120.0, gt=0, description="how long the load runs")
    interval_s: float = Field(1.0, gt=0, description="length of one timeline interval")
    threshold: float = Field(THROTTLE_DROP, gt=0, lt=1, description="relative drop that counts as throttling")


@SCENARIOS.register("burn")
class Burn(Scenario[BurnParams]):
    Info = TimelineInfo
    Params = BurnParams
    headline = ("tflops", "last_vs_first_tflops")
    description = ("Sustained matmul load (gpu-burn style): TFLOP/s, clock, power, temperature over time;"
                   " throttling flag")
    reading = Reading({"tflops": "compute"})

    def skip_reason(self, params: BurnParams, device: DeviceInfo) -> str | None:
        return device_reason(params.precision, device) if params.precision == "tf32" else None

    def estimate_s(self, params: BurnParams, rule: StopRule) -> float:
        return params.duration_s + 5.0

    def run(self, params: BurnParams, ctx: CaseContext) -> None:
        import torch

        dev, n = ctx.device.torch_device, params.size
        torch.backends.cuda.matmul.allow_tf32 = params.precision == "tf32"
        dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16}.get(
            params.precision, torch.bfloat16)
        gen = torch.Generator(device=dev).manual_seed(0)
        a = torch.randn(n, n, device=dev, dtype=dtype, generator=gen)
        b = torch.randn(n, n, device=dev, dtype=dtype, generator=gen)
        c = torch.empty(n, n, device=dev, dtype=dtype)
        flops = 2.0 * n ** 3

        def mm() -> None:
            torch.matmul(a, b, out=c)

        for _ in range(3):
            mm()
        ctx.sync()
        calls = _calls_per_interval(ctx, mm, params.interval_s)
        h = _handle(ctx)
        table = nvml.reason_table() if h is not None else {}
        tl: dict[str, list[Any]] = {k: [] for k in ("t_s", "tflops", "sm_clock_mhz", "power_w", "temp_c", "reasons")}
        sampler = open_sampler(ctx.device.kind)
        quiet.timed(ctx.info, ctx.progress)
        if sampler is not None:
            sampler.start()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < params.duration_s:
            s = ctx.timer.time(mm, 1, calls)[0]  # seconds per call over one interval of `calls` products
            if s * calls > 2 * params.interval_s:  # the rate fell (or was misjudged): re-aim at the interval
                calls = max(1, int(params.interval_s / s))
            tl["t_s"].append(round(time.perf_counter() - t0, 3))
            tl["tflops"].append(flops / s / 1e12)
            if h is not None:
                _read_nvml(h, table, tl)
            ctx.progress(min(1.0, (time.perf_counter() - t0) / params.duration_s), f"{tl['tflops'][-1]:.1f} TFLOP/s")
        readings = sampler.stop() if sampler is not None else {}

        ctx.record("tflops", tl["tflops"])
        d = drop(tl["tflops"])
        if d is not None:
            ctx.record_value("last_vs_first_tflops", sustained_level(tl["tflops"]) / tl["tflops"][0])
        if tl["sm_clock_mhz"]:
            ctx.record("sm_clock_mhz", tl["sm_clock_mhz"])
        if "energy_j" in readings:
            ctx.record_value("avg_power_w", readings["avg_power_w"])
            ctx.record_value("energy_j", readings["energy_j"])
        if tl["temp_c"]:
            ctx.record_value("max_temp_c", max(tl["temp_c"]))
        flags = throttle_flags(tl["tflops"], tl["sm_clock_mhz"], params.threshold, tl["reasons"])
        ctx.info.update(
            timeline={k: ([round(x, 4) for x in v] if k != "reasons" else v) for k, v in tl.items() if v},
            throttled=bool(flags), throttle_flags=flags, calls_per_interval=calls, flops_per_call=flops,
        )


def _calls_per_interval(ctx: CaseContext, mm: Callable[[], None], interval_s: float) -> int:
    """How many products fill one interval, timed over batches that double until one takes a quarter
    of it: a few single calls misjudge a product of microseconds (timer and launch overhead), and an
    interval that runs for the whole duration leaves a one-point timeline."""
    calls = 1
    while True:
        per_call = ctx.timer.time(mm, 1, calls)[0]
        if per_call * calls >= interval_s / 4 or calls >= 1 << 24:
            return max(1, int(interval_s / max(per_call, 1e-12)))
        calls *= 2


def _handle(ctx: CaseContext) -> Any | None:
    if not ctx.device.is_cuda:
        return None
    import torch

    uuid = str(getattr(torch.cuda.get_device_properties(0), "uuid", ""))
    return nvml.handle_by_uuid(uuid) if uuid else None


def _read_nvml(h: Any, table: dict[str, int], tl: dict[str, list[Any]]) -> None:
    sm = nvml.const("NVML_CLOCK_SM")
    clock = nvml.call("nvmlDeviceGetClockInfo", h, sm) if sm is not None else None
    if clock is not None:
        tl["sm_clock_mhz"].append(float(clock))
    p = nvml.call("nvmlDeviceGetPowerUsage", h)
    if p is not None:
        tl["power_w"].append(p / 1000.0)
    t = nvml.temperature_c(h)
    if t is not None:
        tl["temp_c"].append(t)
    r = nvml.clock_reasons(h, table)
    if r is not None:
        tl["reasons"].append(r)
