"""host_bound: where small-batch training stops being bound by the host: a small MLP trained from a real
DataLoader over a sweep of batch sizes; `bottleneck_batch` names the crossover. Metrics (`gpu_busy_fraction`
from torch.profiler's kernel intervals, `gpu_span_fraction` from CUDA events): docs/scenarios.md."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import Field

from llmbench.measure.kernel_profile import profiled_windows
from llmbench.measure.timing import StopRule
from llmbench.scenarios.base import SCENARIOS, BottleneckSweep, CaseContext, Scenario, ScenarioParams
from llmbench.scenarios.reading import Reading

BUSY_THRESHOLD = 0.8
SCALING_THRESHOLD = 0.5
PROFILE_WINDOWS = 3  # profiled windows after the timed steps: one gpu_busy_fraction sample each
PROFILE_WINDOW_S = 0.1  # wall time a window aims at
PROFILE_STEPS = (3, 400)  # fewest and most steps in a window
PROFILE_S = 1.5  # the estimate's allowance for the profiler: CUPTI start-up and the windows


class HostBoundParams(ScenarioParams):
    batch: int = Field(256, ge=1)
    num_workers: int = Field(0, ge=0)  # DataLoader worker processes (0: load in the main process)
    features: int = Field(256, ge=1)
    hidden: int = Field(4096, ge=1)
    layers: int = Field(4, ge=1)  # hidden layers of the MLP (~51M parameters by default)
    classes: int = Field(10, ge=2)
    dataset_size: int = Field(50_000, ge=1)  # samples held in memory (host), cycled over epochs


class HostBoundReading(Reading[HostBoundParams]):
    """Its figures are the host's as much as the GPU's: none is projected."""

    def projection_skip(self, params: HostBoundParams) -> str | None:
        return "host_bound measures the host (CPU, data loading, launches) as much as the GPU: not projected"


@SCENARIOS.register("host_bound")
class HostBound(Scenario[HostBoundParams]):
    Params = HostBoundParams
    headline = ("train_samples_per_s", "gpu_busy_fraction", "cpu_ms_per_step")
    reading = HostBoundReading()
    description = "A small MLP trained from a DataLoader per batch size: where the host stops being the bottleneck"
    # bottleneck_batch is defined below the class: the lambda looks it up when called
    bottleneck_sweep = BottleneckSweep(axis="batch", speed="train_samples_per_s", busy_threshold=BUSY_THRESHOLD,
                                       answer=lambda points: bottleneck_batch(points))

    def host_exclusive(self, params: HostBoundParams) -> str | None:
        return "it measures the host (CPU, data loading, PCIe): a case beside it would be measured with it"

    def estimate_s(self, params: HostBoundParams, rule: StopRule) -> float:
        return rule.min_seconds + 3.0 + 2.0 * params.num_workers + PROFILE_S

    def run(self, params: HostBoundParams, ctx: CaseContext) -> None:
        import torch

        torch.manual_seed(0)
        dev = ctx.device.torch_device
        model = _mlp(params).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()
        batches = _batches(params, pin=ctx.device.is_cuda)
        cuda = ctx.device.is_cuda
        spans: list[Any] = []  # per call: (start, end) CUDA events, or the model's wall seconds on a CPU
        cpu_s: list[float] = []

        def train(xb: Any, yb: Any) -> None:  # transfer, forward, backward, update
            xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xb), yb).backward()
            opt.step()

        def step() -> None:
            c0 = time.process_time()
            xb, yb = next(batches)  # host work: the DataLoader (collate, worker queues)
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
            else:
                t0 = time.perf_counter()
            train(xb, yb)
            if cuda:
                end.record()
                spans.append((start, end))
            else:
                spans.append(time.perf_counter() - t0)
            cpu_s.append(time.process_time() - c0)

        ctx.reset_peak_memory()
        meas = ctx.measure(step)
        ctx.sync()
        n = meas.iters
        wall = sum(meas.samples_s) * meas.inner
        b = params.batch
        ctx.record("step_ms", [s * 1e3 for s in meas.samples_s])
        ctx.record("train_samples_per_s", [b / s for s in meas.samples_s])
        ctx.record_value("cpu_ms_per_step", sum(cpu_s[-n:]) / n * 1e3)
        ctx.info["cpu_time_note"] = "process_time of the main process (its threads); DataLoader workers not counted"
        ctx.info["steps_per_epoch"] = -(-params.dataset_size // b)
        ctx.record_monitors(meas, units_per_iter=b, energy_metric="energy_j_per_sample")
        if not cuda:
            ctx.record_value("model_time_fraction", min(sum(spans[-n:]) / wall, 1.0) if wall else 0.0)
            ctx.info["model_time_note"] = ("on a CPU there is no separate device to be busy: this is the share of "
                                           "the step's wall time spent in forward/backward/update; the rest is the "
                                           "DataLoader")
            return
        span = sum(s.elapsed_time(e) for s, e in spans[-n:]) / 1e3
        ctx.record_value("gpu_span_fraction", min(span / wall, 1.0) if wall else 0.0)
        ctx.info["gpu_span_note"] = ("CUDA events around each timed step's transfer + forward + backward + update, "
                                     "on the GPU's timeline, over the steps' wall time: the gaps between launches "
                                     "inside a step count, so a launch-bound step reads near 1; not a busy fraction")
        # after the timed steps, so the profiler's cost stays out of step_ms and samples/s
        record_gpu_busy(ctx, lambda: train(*next(batches)), wall / n if n else 0.0)


def record_gpu_busy(ctx: Any, step: Any, step_s: float, device: str = "cuda") -> None:
    """Profile PROFILE_WINDOWS windows of `step` (about PROFILE_WINDOW_S each, by the timed `step_s`)
    and record `gpu_busy_fraction` and `gpu_kernel_ms_per_step`, one sample per window; on a profiler
    error, or a window without kernels, neither is recorded and info["gpu_busy_error"] says why.
    `device` "cpu" profiles host operators instead: for tests only."""
    steps = window_steps(step_s)
    try:
        wins = profiled_windows(step, steps, PROFILE_WINDOWS, device)
        if not all(w.intervals for w in wins):  # a busy fraction of 0 would be a false reading
            raise RuntimeError("the profiler recorded no GPU kernels in a window")
    except Exception as e:  # recorded: a diagnosis's problem must not cost the case its measurements
        ctx.info["gpu_busy_error"] = f"{type(e).__name__}: {e}"[:300]
        return
    ctx.record("gpu_busy_fraction", [w.busy_fraction for w in wins])
    ctx.record("gpu_kernel_ms_per_step", [w.busy_s / w.steps * 1e3 for w in wins])
    ctx.info["gpu_busy_note"] = (
        f"torch.profiler (CUDA activity) over {PROFILE_WINDOWS} windows of {steps} steps after the timed ones, one "
        "sample per window: the union of the kernels' (and copies') intervals, overlaps counted once, over the "
        "window's wall time (synchronised at both ends, DataLoader included), so launch gaps are idle; "
        "profiled_step_ms against step_ms shows what the profiler cost the steps")
    ctx.info["profiled_step_ms"] = round(sum(w.wall_s for w in wins) / (steps * len(wins)) * 1e3, 4)


def window_steps(step_s: float) -> int:
    """Steps per profiled window: enough for about PROFILE_WINDOW_S of wall time, within PROFILE_STEPS."""
    lo, hi = PROFILE_STEPS
    return hi if step_s <= 0 else max(lo, min(hi, math.ceil(PROFILE_WINDOW_S / step_s)))


def _mlp(params: HostBoundParams) -> Any:
    import torch

    dims = [params.features] + [params.hidden] * params.layers
    mods: list[Any] = []
    for a, c in itertools.pairwise(dims):
        mods += [torch.nn.Linear(a, c), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods, torch.nn.Linear(dims[-1], params.classes))


def _batches(params: HostBoundParams, pin: bool) -> Iterator[Any]:
    """Batches from a DataLoader over a synthetic in-memory dataset, shuffled, epoch after epoch."""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(params.dataset_size, params.features, generator=gen)
    y = torch.randint(0, params.classes, (params.dataset_size,), generator=gen)
    loader = DataLoader(TensorDataset(x, y), batch_size=params.batch, shuffle=True, drop_last=False,
                        num_workers=params.num_workers, pin_memory=pin,
                        persistent_workers=params.num_workers > 0, generator=gen)
    while True:
        yield from loader


def bottleneck_batch(points: Sequence[tuple[int, float, float | None]], busy: float = BUSY_THRESHOLD,
                     scaling: float = SCALING_THRESHOLD) -> dict[str, Any]:
    """The batch size from which the GPU, not the host, bounds training, from a batch sweep's
    (batch, train_samples_per_s, gpu_busy_fraction or None) points.

    Rule 1, where busy fractions are known: the smallest batch whose GPU-busy fraction is >= `busy`.
    The fraction is the recorded `gpu_busy_fraction`: kernel time from the profiler (union of the
    kernels' intervals) over wall time, so launch gaps count as idle. Cases recorded before it was
    measured so (they have no `gpu_span_fraction`) hold the CUDA-event span there, which reads near 1
    for launch-bound steps: rule 1 answers too small a batch on those; pass None to use rule 2.
    Rule 2, otherwise (a CPU run, no CUDA events): while the host bounds a step, its time hardly
    grows with the batch and samples/s grows in proportion; the answer is the smallest batch b_i
    after which the next batch b_{i+1} gains less than `scaling` of the proportional gain:
    (s_{i+1}/s_i - 1) / (b_{i+1}/b_i - 1) < scaling.
    Returns {"batch": int or None (not reached in the sweep), "rule": which rule answered}."""
    pts = sorted(points)
    if pts and all(f is not None for _, _, f in pts):
        hit = next((b for b, _, f in pts if f is not None and f >= busy), None)
        return {"batch": hit, "rule": f"smallest batch with gpu_busy_fraction >= {busy:g}"}
    rule = f"samples/s gains < {scaling:g} of proportional to the next batch"
    for (b0, s0, _), (b1, s1, _) in itertools.pairwise(pts):
        if b1 > b0 and s0 > 0 and (s1 / s0 - 1) / (b1 / b0 - 1) < scaling:
            return {"batch": b0, "rule": rule}
    return {"batch": None, "rule": rule}
