"""host_bound: where small-batch training stops being bound by the host. A small MLP is trained from a
real torch DataLoader (num_workers as an axis) over an in-memory synthetic dataset, at batch sizes
from 1 to ~10^4: at small batches the step time is Python, data loading and kernel launches (a fast
CPU beats a fast GPU), at large ones the GPU's math. `bottleneck_batch` names the crossover."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import Field

from llmbench.measure.timing import StopRule
from llmbench.scenarios.base import SCENARIOS, CaseContext, Scenario, ScenarioParams

BUSY_THRESHOLD = 0.8
SCALING_THRESHOLD = 0.5


class HostBoundParams(ScenarioParams):
    batch: int = Field(256, ge=1)
    num_workers: int = Field(0, ge=0)  # DataLoader worker processes (0: load in the main process)
    features: int = Field(256, ge=1)
    hidden: int = Field(4096, ge=1)
    layers: int = Field(4, ge=1)  # hidden layers of the MLP (~51M parameters by default)
    classes: int = Field(10, ge=2)
    dataset_size: int = Field(50_000, ge=1)  # samples held in memory (host), cycled over epochs


@SCENARIOS.register("host_bound")
class HostBound(Scenario):
    Params = HostBoundParams
    headline = ("train_samples_per_s", "gpu_busy_fraction", "cpu_ms_per_step")
    description = "A small MLP trained from a DataLoader per batch size: where the host stops being the bottleneck"

    def projection_skip(self, params: dict[str, Any]) -> str | None:
        return "host_bound measures the host (CPU, data loading, launches) as much as the GPU: not projected"

    def estimate_s(self, params: Any, rule: StopRule) -> float:
        return rule.min_seconds + 3.0 + 2.0 * params.num_workers

    def run(self, params: Any, ctx: CaseContext) -> None:
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

        def step() -> None:
            c0 = time.process_time()
            xb, yb = next(batches)  # host work: the DataLoader (collate, worker queues)
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
            else:
                t0 = time.perf_counter()
            xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xb), yb).backward()
            opt.step()
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
        if cuda:
            busy = sum(s.elapsed_time(e) for s, e in spans[-n:]) / 1e3
            ctx.record_value("gpu_busy_fraction", min(busy / wall, 1.0) if wall else 0.0)
            ctx.info["gpu_busy_note"] = ("CUDA events around each step's transfer + forward + backward + update, on "
                                         "the GPU's timeline, over the steps' wall time: time waiting for the "
                                         "DataLoader is idle; launch gaps inside the model work count as busy "
                                         "(gpu_util_pct from NVML samples kernel occupancy instead)")
        else:
            ctx.record_value("model_time_fraction", min(sum(spans[-n:]) / wall, 1.0) if wall else 0.0)
            ctx.info["model_time_note"] = ("on a CPU there is no separate device to be busy: this is the share of "
                                           "the step's wall time spent in forward/backward/update; the rest is the "
                                           "DataLoader")
        ctx.info["cpu_time_note"] = "process_time of the main process (its threads); DataLoader workers not counted"
        ctx.info["steps_per_epoch"] = -(-params.dataset_size // b)
        ctx.record_monitors(meas, units_per_iter=b, energy_metric="energy_j_per_sample")


def _mlp(params: Any) -> Any:
    import torch

    dims = [params.features] + [params.hidden] * params.layers
    mods: list[Any] = []
    for a, c in itertools.pairwise(dims):
        mods += [torch.nn.Linear(a, c), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods, torch.nn.Linear(dims[-1], params.classes))


def _batches(params: Any, pin: bool) -> Iterator[Any]:
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
