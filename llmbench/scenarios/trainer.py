"""trainer: the transformers Trainer as its users run it (trainer-benchmark.py's variations: fp32, fp16 or
bf16 mixed precision, TF32), per-step times from a callback's CUDA events, the Trainer's own figure kept
beside. docs/scenarios.md (`trainer`)."""

from __future__ import annotations

import itertools
import tempfile
import time
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from llmbench.engines.base import TrainingEngine
from llmbench.measure import quiet
from llmbench.measure.monitors import open_sampler
from llmbench.measure.timing import Measurement, StopRule
from llmbench.models.presets import PRESETS, known_preset
from llmbench.models.synthetic import progression_batch
from llmbench.precision import DeviceInfo
from llmbench.scenarios import training as tr
from llmbench.scenarios.base import SCENARIOS, CaseContext, Charts, EngineSlot, Scenario, ScenarioParams
from llmbench.scenarios.reading import Reading


class TrainerParams(ScenarioParams):
    model: str | None = Field(None, description="architecture preset (llmbench.models.presets)")
    pretrained: str | None = Field(None, description="hub id or local path whose config is used (random weights)")
    precision: Literal["fp32", "fp16", "bf16"] = Field(
        "fp32", description="fp32, or fp16/bf16 automatic mixed precision (Trainer's --fp16/--bf16)")
    tf32: bool = False
    batch_size: int = Field(8, ge=1)
    seq_len: int = Field(128, ge=2)
    lr: float = Field(5e-5, gt=0)

    _known_model = field_validator("model")(known_preset)

    @model_validator(mode="after")
    def _one_model(self) -> TrainerParams:
        if (self.model is None) == (self.pretrained is None):
            raise ValueError("give exactly one of model (a preset: " + ", ".join(PRESETS)
                             + ") or pretrained (a hub id or path)")
        return self


@SCENARIOS.register("trainer")
class TrainerScenario(Scenario[TrainerParams]):
    charts = Charts(sweep_axes=("batch_size", "seq_len"))
    Params = TrainerParams
    description = "transformers Trainer: samples/s, step time, memory, energy per sample, loss (fp32/fp16/bf16, tf32)"
    headline = ("train_samples_per_s", "step_ms", "peak_memory_gib")
    reading = Reading({"*": "compute"})
    engine_slot = EngineSlot(TrainingEngine, default="hf")  # the transformers Trainer: hf's packages

    def skip_reason(self, params: TrainerParams, device: DeviceInfo) -> str | None:
        if not device.is_cuda and params.precision == "fp16":
            return "fp16 mixed precision (Trainer --fp16) needs a GPU; this is " + device.name
        if not device.is_cuda and params.tf32:
            return "tf32 is a math mode of NVIDIA GPUs (Ampere and later); this is " + device.name
        if device.is_cuda and (params.precision == "bf16" or params.tf32) and (device.cc or (0, 0)) < (8, 0):
            return f"{'bf16' if params.precision == 'bf16' else 'tf32'} needs compute capability >= 8.0"
        return None

    def estimate_s(self, params: TrainerParams, rule: StopRule) -> float:
        return 20.0 + (rule.warmup_iters + rule.min_iters) * 1.0

    def run(self, params: TrainerParams, ctx: CaseContext) -> None:
        import torch

        ctx.info["config"] = params.model_dump(mode="json")
        cuda = ctx.device.is_cuda
        if cuda:
            torch.backends.cuda.matmul.allow_tf32 = params.tf32
            torch.backends.cudnn.allow_tf32 = params.tf32
        warmup, timed = ctx.rule.warmup_iters, ctx.rule.min_iters
        with tr.oom_as_result(ctx):
            model = _build(params, ctx.device.torch_device)
            vocab = int(model.config.vocab_size)
            data = _dataset(vocab, params.batch_size, params.seq_len, warmup + timed)
            timer = StepTimer(cuda, warmup, ctx)
            with tempfile.TemporaryDirectory(prefix="llmbench-trainer-") as out:
                trainer = _trainer(model, data, params, out, warmup + timed, cuda, timer)
                ctx.reset_peak_memory()
                result = trainer.train()
        steps = timer.step_seconds()
        ctx.info["warmup_steps"] = warmup
        ctx.info["timed_steps"] = len(steps) - warmup
        timed_s = steps[warmup:]
        period = timer.period_seconds()[warmup:]
        ctx.record("step_ms", [s * 1e3 for s in timed_s])
        ctx.record("train_samples_per_s", [params.batch_size / s for s in period])
        reported = result.metrics.get("train_samples_per_second")
        if reported is not None:
            ctx.record_value("trainer_reported_samples_per_s", float(reported))
        m = Measurement(samples_s=period, warmup_s=0.0, elapsed_s=sum(period), timer=timer.name,
                        readings=timer.readings)
        ctx.record_monitors(m, units_per_iter=params.batch_size, energy_metric="energy_j_per_sample")
        tr.loss_metrics(ctx, trainer.loss_history())
        ctx.info["model_class"] = type(model).__name__
        ctx.code_path.update(_code_path(trainer))


def _code_path(trainer: Any) -> dict[str, Any]:
    """What ran, read from the Trainer after training (not from the params): its precision mode, math
    mode, optimizer, compilation and the model's attention and layer classes."""
    import torch

    args, model = trainer.args, trainer.model
    opt = getattr(trainer.optimizer, "optimizer", trainer.optimizer)  # accelerate wraps it
    fused = bool(opt.defaults.get("fused")) or bool(opt.defaults.get("foreach"))
    layers = sorted({type(m).__name__ for m in model.modules() if type(m).__name__ in ("Linear", "Conv1D")})
    return {
        "engine": "hf-trainer",
        "amp": "fp16" if args.fp16 else "bf16" if args.bf16 else "none (fp32)",
        "tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "optimizer": type(opt).__name__ + (" (fused/foreach)" if fused else ""),
        "torch_compile": bool(args.torch_compile),
        "gradient_checkpointing": _checkpointing(model),
        "attention": getattr(model.config, "_attn_implementation", None) or "eager",
        "layers": layers,
    }


def _checkpointing(model: Any) -> bool:
    """Whether the model recomputes activations (transformers 5 renamed the property; the old name warns)."""
    new = hasattr(type(model), "is_activation_checkpointing")
    name = "is_activation_checkpointing" if new else "is_gradient_checkpointing"
    return bool(getattr(model, name, False))


def _build(params: TrainerParams, device: str) -> Any:
    """fp32 master weights (Trainer's amp casts inside autocast), random, on the device."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    from llmbench.models.build import make_config

    cfg = make_config(params.model, params.pretrained)
    auto = AutoModelForSeq2SeqLM if getattr(cfg, "is_encoder_decoder", False) else AutoModelForCausalLM
    torch.manual_seed(0)
    with torch.device(device):
        model = auto.from_config(cfg, dtype=torch.float32)
    return model  # GPT-2 keeps its Conv1D: the Trainer as users run it


def _dataset(vocab: int, batch: int, seq: int, steps: int) -> list[dict[str, Any]]:
    """One sample per row of the progression task; labels = inputs (the model shifts them)."""
    rows = progression_batch(vocab, batch * steps, seq, seed=0)
    return [{"input_ids": r, "labels": r.clone()} for r in rows]


class StepTimer:
    """A TrainerCallback's clock: an event (or perf_counter) at each step's begin and end, resolved
    after train(); the NVML window opens at the first timed step and closes at the end."""

    def __init__(self, cuda: bool, warmup: int, ctx: CaseContext) -> None:
        self.cuda, self.warmup, self.ctx = cuda, warmup, ctx
        self.name = "cuda_event" if cuda else "perf_counter"
        self.begins: list[Any] = []
        self.ends: list[Any] = []
        self.readings: dict[str, Any] = {}
        self._sampler = open_sampler(ctx.device.kind)
        self._window_start: float | None = None  # the timed window's wall-clock start (info.windows_unix)

    def _mark(self) -> Any:
        if not self.cuda:
            return time.perf_counter()
        import torch

        e = torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    def begin(self) -> None:
        if len(self.begins) == self.warmup:  # the timed window starts: one sync, outside any timed step
            quiet.timed(self.ctx.info, self.ctx.progress)
            self.ctx.sync()
            self.ctx.probe_host(force=True)  # before the first timed step's mark and after the last (train_end)
            self._window_start = time.time()
            if self._sampler is not None:
                self._sampler.start()
        self.begins.append(self._mark())
        self.ctx.progress(len(self.begins) / max(1, self.warmup + self.ctx.rule.min_iters), "training")

    def end(self) -> None:
        self.ends.append(self._mark())

    def train_end(self) -> None:
        self.ctx.sync()
        if self._window_start is not None:
            self.ctx.probe_host(force=True)
            self.ctx.note_window(self._window_start, time.time())
        if self._sampler is not None and len(self.begins) > self.warmup:
            self.readings = self._sampler.stop() or {}

    def _delta(self, a: Any, b: Any) -> float:
        return float(a.elapsed_time(b)) / 1e3 if self.cuda else float(b - a)

    def step_seconds(self) -> list[float]:
        """on_step_begin to on_step_end of each step (forward, backward, optimizer)."""
        return [self._delta(a, b) for a, b in zip(self.begins, self.ends, strict=False)]

    def period_seconds(self) -> list[float]:
        """Each step's begin to the next one's (the last: to its end): the whole loop, data loading
        and callbacks included, what throughput sees."""
        starts = [*self.begins, self.ends[-1]] if self.ends else self.begins
        return [self._delta(a, b) for a, b in itertools.pairwise(starts)]


def _trainer(model: Any, data: list[dict[str, Any]], params: TrainerParams, out: str, steps: int, cuda: bool,
             timer: StepTimer) -> Any:
    from transformers import Trainer, TrainerCallback, TrainingArguments, default_data_collator

    class Callback(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            timer.begin()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            timer.end()

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            timer.train_end()

    class LossKeepingTrainer(Trainer):
        """Keeps each step's loss tensor (already detached by training_step): no sync in the loop."""

        step_losses: list[Any]

        def training_step(self, *a: Any, **kw: Any) -> Any:
            loss = super().training_step(*a, **kw)
            self.step_losses.append(loss)
            return loss

        def loss_history(self) -> list[float]:
            return [float(x) for x in self.step_losses]

    args = TrainingArguments(
        output_dir=out, per_device_train_batch_size=params.batch_size, max_steps=steps,
        learning_rate=params.lr, fp16=params.precision == "fp16", bf16=params.precision == "bf16",
        tf32=params.tf32 if cuda else None, logging_strategy="no", save_strategy="no", report_to="none",
        dataloader_num_workers=0, disable_tqdm=True, use_cpu=not cuda, seed=0, optim="adamw_torch",
    )
    trainer = LossKeepingTrainer(model=model, args=args, train_dataset=data, data_collator=default_data_collator,
                                 callbacks=[Callback()])
    trainer.step_losses = []
    return trainer

