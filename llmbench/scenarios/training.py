"""What the training scenarios share (no scenario is registered here): the timed loop of a
TrainingSession on learnable synthetic data, its metrics, MFU, and out-of-memory as a result."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from llmbench.engines.base import TrainingSession
from llmbench.hardware.specs import match_name
from llmbench.measure import loss_curve as lc
from llmbench.measure.timing import Measurement, StopRule
from llmbench.models.shape import ModelShape
from llmbench.models.synthetic import progression_batches
from llmbench.models.train_flops import train_flops
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import CaseContext

LOSS_TAIL = 5  # train_loss is the mean of the last steps' losses
DATA_BATCHES = 16  # distinct batches, made before timing and cycled

def peak_tflops(device: DeviceInfo, precision: str = "bf16") -> float | None:
    """The device's dense peak for `precision` from llmbench's GPU specs; None off a known GPU."""
    if not device.is_cuda:
        return None
    spec = match_name(device.name, device.memory_gib)
    return spec.peak(precision) if spec else None

@contextmanager
def oom_as_result(ctx: CaseContext) -> Iterator[None]:
    """An out-of-memory is a result: the memory reached goes into the case info, then the error goes
    on to the worker, which makes the case `oom` (its params are the configuration)."""
    try:
        yield
    except BaseException as e:  # only read (an OOM's memory) and raised on: the worker decides the status
        import torch

        if isinstance(e, (torch.OutOfMemoryError, MemoryError)) or "out of memory" in str(e).lower():
            reached: dict[str, Any] = {"error": type(e).__name__}
            if ctx.device.is_cuda:
                reached["max_memory_allocated_gib"] = torch.cuda.max_memory_allocated() / 2**30
                reached["max_memory_reserved_gib"] = torch.cuda.max_memory_reserved() / 2**30
            ctx.info["oom"] = reached
        raise

def loss_metrics(ctx: CaseContext, losses: list[float]) -> None:
    """Every step's loss in order (warm-up included) in info; train_loss = mean of the last steps."""
    ctx.info["loss_curve"] = losses
    ctx.info["steps"] = len(losses)
    if losses:
        tail = losses[-LOSS_TAIL:]
        ctx.record_value("train_loss", statistics.fmean(tail))

def curve_metrics(ctx: CaseContext, losses: list[float]) -> None:
    """What the whole curve says (llmbench.measure.loss_curve's rules): final_loss, loss_spikes and the
    spikes' steps, with the rules in info so a reader knows what was counted."""
    if not losses:
        return
    found = lc.spikes(losses)
    ctx.record_value("final_loss", lc.final_loss(losses))
    ctx.record_value("loss_spikes", float(len(found)))
    ctx.info.update(final_steps=lc.final_steps(len(losses)), loss_spike_steps=found, loss_spike_rule=lc.SPIKE_RULE)


def time_steps(session: TrainingSession, ctx: CaseContext, *, batch: int, seq: int, seed: int = 0,
               batches: list[Any] | None = None) -> Measurement:
    """Warm up and time session.step: on `batches` in their order, one each step (a fixed data order: the
    rule must ask for exactly that many steps, `fixed_rule`), else on cycled batches of the learnable
    progression task."""
    if batches is not None:
        order: Iterator[Any] = iter(batches)
    else:
        order = itertools.cycle(progression_batches(session.vocab_size, batch, seq, DATA_BATCHES, seed=seed,
                                                    device=ctx.device.torch_device))
    ctx.reset_peak_memory()
    return ctx.measure(lambda: session.step(next(order)))


def fixed_rule(rule: StopRule, steps: int | None) -> StopRule:
    """The rule that runs exactly `steps` steps (the rule's warm-up first, at most steps - 1 of them),
    else exactly warmup_iters + min_iters; one step per timed sample either way."""
    warmup = rule.warmup_iters if steps is None else min(rule.warmup_iters, steps - 1)
    timed = rule.min_iters if steps is None else steps - warmup
    return rule.model_copy(update={"warmup_iters": warmup, "min_iters": timed, "max_iters": timed,
                                   "min_seconds": 0.0, "min_sample_s": 0.0})


def total_steps(rule: StopRule) -> int:
    return rule.warmup_iters + rule.min_iters

def record_step_metrics(ctx: CaseContext, m: Measurement, *, batch: int, seq: int,
                        flops_per_step: float | None = None, precision: str = "bf16") -> None:
    """step_ms, train_tokens_per_s, train_samples_per_s (one sample per timed step), mfu where the
    device's peak is known, memory and energy per token."""
    tokens = batch * seq
    ctx.record("step_ms", [s * 1e3 for s in m.samples_s])
    ctx.record("train_tokens_per_s", [tokens / s for s in m.samples_s])
    ctx.record("train_samples_per_s", [batch / s for s in m.samples_s])
    peak = peak_tflops(ctx.device, precision)
    if flops_per_step and peak:
        ctx.record("mfu", [flops_per_step / s / (peak * 1e12) for s in m.samples_s])
        ctx.info["mfu_peak_tflops"] = peak
    ctx.record_monitors(m, units_per_iter=tokens, energy_metric="energy_j_per_token")

def step_flops(shape: ModelShape, *, method: str, trainable: int, batch: int, seq: int,
               recompute: bool = False) -> float:
    """train_flops for a session: full fine-tuning trains every matmul weight; LoRA trains its
    adapters over a frozen base."""
    matmul = shape.linear_params + shape.lm_head_params
    t, f = (matmul, 0) if method == "full" else (trainable, matmul)
    return train_flops(trainable=t, frozen=f, layers=shape.layers, hidden=shape.heads * shape.head_dim,
                       seq=seq, tokens=batch * seq, recompute=recompute)
