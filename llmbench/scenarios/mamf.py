"""mamf: Maximum Achievable Matmul FLOPS per precision, found by a shape search (Stas Bekman's mamf-finder
idea); every point stays in `info`. The headline `tflops` is the best sustained rate, the search's best
burst kept as `burst_tflops`: docs/design.md, "Metrics"."""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any

from pydantic import field_validator

from llmbench.measure import quiet
from llmbench.measure.timing import StopRule
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import SCENARIOS, CaseContext, Scenario, ScenarioParams, Skip
from llmbench.scenarios.gemm import Gemm, GemmParams, GemmPrecision, matmul
from llmbench.scenarios.reading import Reading

Range = tuple[int, int, int]  # start, stop (inclusive), step
POINT_MIN_S = 0.02  # each shape is timed for about this long (after 2 warm-up calls)
POINT_MIN_ITERS = 5
SUSTAIN_TOP = 4  # the search's best shapes re-measured as sustained rates
SUSTAIN_S = 1.0  # each for at least this long, back to back


def values(r: Range) -> list[int]:
    start, stop, step = r
    return list(range(start, stop + 1, step))


class MamfParams(ScenarioParams):
    precision: GemmPrecision = "bf16"
    m: Range = (4096, 16384, 2048)
    n: Range = (4096, 16384, 2048)
    k: Range = (4096, 16384, 4096)

    @field_validator("m", "n", "k")
    @classmethod
    def _range(cls, v: Range) -> Range:
        start, stop, step = v
        if start < 1 or step < 1 or stop < start:
            raise ValueError(f"a range is [start, stop, step] with 1 <= start <= stop and step >= 1, got {list(v)}")
        return v

    def shapes(self) -> list[tuple[int, int, int]]:
        return list(itertools.product(values(self.m), values(self.n), values(self.k)))


@SCENARIOS.register("mamf")
class Mamf(Scenario[MamfParams]):
    Params = MamfParams
    headline = ("tflops",)
    description = "Maximum achievable matmul TFLOP/s per precision: the best of a shape search (MAMF)"
    reading = Reading({"tflops": "compute"})

    def skip_reason(self, params: MamfParams, device: DeviceInfo) -> str | None:
        """The gemm gate of the precision, checked on the search's first shape and on every shape's
        alignment (fp8: multiples of 16; int8: M > 16, K and N multiples of 8)."""
        bad = [s for s in params.shapes() if _shape_reason(params.precision, s, device)]
        if bad:
            return f"{_shape_reason(params.precision, bad[0], device)} ({len(bad)} of {len(params.shapes())} shapes)"
        return None

    def estimate_s(self, params: MamfParams, rule: StopRule) -> float:
        return len(params.shapes()) * (POINT_MIN_S + 0.05) + SUSTAIN_TOP * (SUSTAIN_S + 0.2) + 2.0

    def run(self, params: MamfParams, ctx: CaseContext) -> None:
        shapes = params.shapes()
        pts: dict[str, list[Any]] = {"m": [], "n": [], "k": [], "tflops": []}
        quiet.timed(ctx.info, ctx.progress)  # every point is timed
        for i, (m, n, k) in enumerate(shapes):
            ctx.progress(i / len(shapes), f"{m}x{n}x{k}")
            fn, *_ = matmul(params.precision, m, n, k, ctx.device.torch_device)
            fn()
            fn()
            ctx.sync()
            once = ctx.timer.time(fn, 1)[0]
            iters = max(POINT_MIN_ITERS, math.ceil(POINT_MIN_S / max(once, 1e-9)))
            t = statistics.median(ctx.timer.time(fn, iters))
            for key, v in (("m", m), ("n", n), ("k", k), ("tflops", float(f"{2.0 * m * n * k / t / 1e12:.4g}"))):
                pts[key].append(v)
            del fn
        if not pts["tflops"]:
            raise Skip("the search ranges hold no shape")
        order = sorted(range(len(pts["tflops"])), key=pts["tflops"].__getitem__, reverse=True)
        burst = order[0]
        ctx.progress(1.0, "sustained rate of the best shapes")
        sustained = {i: self._sustained(params.precision, pts["m"][i], pts["n"][i], pts["k"][i], ctx)
                     for i in order[:SUSTAIN_TOP]}
        best = max(sustained, key=sustained.__getitem__)
        ctx.record_value("tflops", sustained[best])
        ctx.record_value("burst_tflops", pts["tflops"][burst])
        ctx.info.update(best_shape=[pts["m"][best], pts["n"][best], pts["k"][best]],
                        burst_shape=[pts["m"][burst], pts["n"][burst], pts["k"][burst]], points=pts,
                        sustained=[{"shape": [pts["m"][i], pts["n"][i], pts["k"][i]], "burst_tflops": pts["tflops"][i],
                                    "sustained_tflops": v} for i, v in sustained.items()],
                        median_tflops=statistics.median(pts["tflops"]))
        ctx.code_path.update(headline=f"best sustained rate: the {SUSTAIN_TOP} best search shapes each run back to "
                             f"back for >= {SUSTAIN_S} s", search_point_s=POINT_MIN_S)

    def _sustained(self, precision: str, m: int, n: int, k: int, ctx: CaseContext) -> float:
        """TFLOP/s of one shape over at least SUSTAIN_S of back-to-back calls (total work / total time)."""
        fn, *_ = matmul(precision, m, n, k, ctx.device.torch_device)
        fn()
        ctx.sync()
        once = statistics.median(ctx.timer.time(fn, 3))
        iters = max(POINT_MIN_ITERS, math.ceil(SUSTAIN_S / max(once, 1e-9)))
        total = sum(ctx.timer.time(fn, 1, inner=iters)) * iters
        return float(f"{2.0 * m * n * k * iters / total / 1e12:.4g}")


def _shape_reason(precision: str, shape: tuple[int, int, int], device: DeviceInfo) -> str | None:
    try:
        p = GemmParams(precision=precision, shape=shape)  # type: ignore[arg-type]
    except ValueError as e:
        return str(e).splitlines()[-1] if "\n" in str(e) else str(e)
    return Gemm().skip_reason(p, device)
