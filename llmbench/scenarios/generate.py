"""generate: latency and throughput of text generation (TTFT, TPOT, ITL, E2E, tokens/s), memory,
energy per token, roofline efficiency, and accuracy against the bf16 reference of the same weights.

Each timed iteration is one full generate() of batch_size x output_len tokens (synthetic ids of
exactly input_len, EOS masked until output_len). Per-token times come from a timestamp taken when
each token's logits are ready: a CUDA event recorded on the stream (no host synchronisation added
inside the loop) or perf_counter on the CPU. This module imports no torch at import time.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from llmbench import precision as prec
from llmbench.caseinfo import StepInfo
from llmbench.engines.base import (
    Capability,
    CaseSize,
    GenerationSession,
    InferenceEngine,
    LoadOptions,
    ModelRef,
    RequestTiming,
)
from llmbench.errors import choices_hint
from llmbench.hardware import roofline
from llmbench.hardware.roofline import Bound
from llmbench.hardware.specs import GpuSpec, match_name
from llmbench.measure import compile_cache
from llmbench.measure.kernel_profile import StepProfile, decode_step_profile
from llmbench.measure.timing import StopRule
from llmbench.models.presets import PRESETS, known_preset
from llmbench.models.shape import ModelShape
from llmbench.precision import DeviceInfo
from llmbench.results import MetricResult
from llmbench.scenarios.bandwidth import measured_copy_tb_s
from llmbench.scenarios.base import SCENARIOS, CaseContext, Charts, EngineSlot, Scenario, ScenarioParams, Skip
from llmbench.scenarios.reading import Reading

REFERENCE = "bf16"
PROBE_SHAPE = (2, 64)  # the fixed batch the accuracy metrics are computed on
PROFILE_TOKENS = 16  # the profiled diagnostic generate()s are short: profiling every kernel is slow
SEED = 0


class GenerateParams(ScenarioParams):
    model: str | None = Field(None, description="architecture preset (llmbench.models.presets)")
    pretrained: str | None = Field(None, description="hub id or local path, instead of a preset")
    weights: Literal["random", "pretrained"] = Field(
        "random", description="random: exact shapes, no download; pretrained: from_pretrained(pretrained)"
    )
    precision: str = "bf16"
    batch_size: int = Field(1, ge=1)
    input_len: int = Field(128, ge=1)
    output_len: int = Field(128, ge=2, description=">= 2: TPOT = (E2E - TTFT) / (N - 1)")
    # accuracy on real text (scenarios/generate_quality.py), with real weights only
    quality: bool = Field(False, description="perplexity, KL and top-1 against the bf16 reference, greedy agreement "
                          "and the task set, on the session whose speed is measured (weights = 'pretrained')")
    quality_offset: int = Field(0, ge=0, description="first token of the corpus window")
    quality_tokens: int = Field(8192, ge=512, description="tokens of the corpus window (512-token sequences)")
    quality_items: int | None = Field(None, ge=1, description="the first n items of the task set; None: all")
    quality_prompts: int | None = Field(None, ge=1, description="the first n greedy prompts; None: all")
    accuracy_gate: dict[str, float] | None = Field(
        None, description="quality = true: metric -> the largest drop against the reference that passes; None, "
        "the default (llmbench.models.quality.DEFAULT_GATE), fails a case whose perplexity is more than 5% above "
        "the bf16 reference's")

    added_later: ClassVar[frozenset[str]] = frozenset(
        {"quality", "quality_offset", "quality_tokens", "quality_items", "quality_prompts", "accuracy_gate"})

    @model_validator(mode="before")
    @classmethod
    def _pretrained_implies_weights(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("pretrained") and "weights" not in data:
            data = {**data, "weights": "pretrained"}
        return data

    _known_model = field_validator("model")(known_preset)

    @field_validator("precision")
    @classmethod
    def _known_precision(cls, v: str) -> str:
        if v not in prec.PRECISIONS:
            raise ValueError(f"unknown precision {v!r}; {choices_hint(v, prec.PRECISIONS)}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> GenerateParams:
        if (self.model is None) == (self.pretrained is None):
            raise ValueError(
                "give exactly one of model (a preset: " + ", ".join(PRESETS) + ") or pretrained (a hub id or path)"
            )
        ships = self.model is not None and PRESETS[self.model].weights_from
        if self.weights == "pretrained" and self.pretrained is None and not ships:
            raise ValueError("weights='pretrained' needs pretrained='<hub id or local path>' or a preset that ships "
                             f"its weights ({', '.join(n for n, p in PRESETS.items() if p.weights_from)})")
        if self.quality and self.weights != "pretrained":
            raise ValueError("quality = true needs real weights (weights = 'pretrained'): on random weights "
                             "perplexity and task accuracy mean nothing")
        from llmbench.models.quality import GATE_METRICS

        for name in self.accuracy_gate or {}:
            if name not in GATE_METRICS:
                raise ValueError(f"accuracy_gate: unknown metric {name!r}; {choices_hint(name, GATE_METRICS)}")
        if self.model is not None:
            limit = PRESETS[self.model].max_positions
            if self.input_len + self.output_len > limit:
                raise ValueError(
                    f"input_len + output_len = {self.input_len + self.output_len} exceeds {self.model}'s "
                    f"{limit} positions"
                )
        return self


# -- per-token timing -------------------------------------------------------------------------------


@dataclass
class TokenMetrics:
    ttft_ms: float
    tpot_ms: float
    e2e_ms: float
    itl_ms: list[float]
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    output_tokens_per_s: float


def token_metrics(
    start: float, tokens: Sequence[float], end: float, *, batch: int, input_len: int, count: int | None = None
) -> TokenMetrics:
    """Metrics of one generate() from its timestamps (seconds): `start` before the call, `tokens[i]`
    when token i's logits were ready, `end` after the call returned.

    TTFT = t1 - start; E2E = end - start; TPOT = (E2E - TTFT) / (N - 1); ITL = each t(i+1) - t(i);
    prefill tok/s = batch * input_len / TTFT; decode tok/s = batch * (N - 1) / (E2E - TTFT);
    output tok/s = batch * N / E2E. With `count`, N is that and `tokens` holds only the first token's
    time (and the last's): the request-level figures of an engine without per-token times."""
    n = len(tokens) if count is None else count
    if n < 2:
        raise ValueError(f"need at least 2 token timestamps for TPOT, got {n}")
    ttft = tokens[0] - start
    e2e = end - start
    decode = e2e - ttft
    if ttft <= 0 or decode <= 0:
        raise ValueError(f"timestamps out of order: TTFT {ttft}, E2E {e2e}")
    return TokenMetrics(
        ttft_ms=ttft * 1e3,
        tpot_ms=decode / (n - 1) * 1e3,
        e2e_ms=e2e * 1e3,
        itl_ms=[(b - a) * 1e3 for a, b in itertools.pairwise(tokens)] if count is None else [],
        prefill_tokens_per_s=batch * input_len / ttft,
        decode_tokens_per_s=batch * (n - 1) / decode,
        output_tokens_per_s=batch * n / e2e,
    )


@dataclass
class TokenClock:
    """Timestamps of each generate(): begin, one per token, end. On a GPU each is a CUDA event
    recorded on the current stream (resolved after the timed window, one sync); else perf_counter."""

    cuda: bool
    runs: list[list[Any]] = field(default_factory=list)

    def _now(self) -> Any:
        if not self.cuda:
            return time.perf_counter()
        import torch

        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def begin(self) -> None:
        self.runs.append([self._now()])

    def stamp(self) -> None:
        self.runs[-1].append(self._now())

    def end(self) -> None:
        self.stamp()

    def seconds(self, last: int) -> list[list[float]]:
        """The last `last` runs as seconds since each run's begin: [0, t1, ..., tN, end]."""
        runs = self.runs[-last:] if last else []
        if not self.cuda:
            return [[t - r[0] for t in r] for r in runs]
        if runs:
            runs[-1][-1].synchronize()
        return [[0.0] + [r[0].elapsed_time(e) / 1e3 for e in r[1:]] for r in runs]


# -- the scenario ---------------------------------------------------------------------------------


SHORT_PROMPT = 512  # prompt tokens up to which a case's TTFT measures the host (GenerateReading.measures_host)


class GenerateReading(Reading[GenerateParams]):
    """Prefill bound by compute, decode by memory, E2E from both; a short prompt's TTFT is the host's."""

    def measures_host(self, params: GenerateParams, metric: str) -> bool:
        """Time to first token of a short prompt: a few ms of an 8B model's prefill on a Hopper GPU against
        TTFT of tens of ms, set by the request's host work (a compiled model's Python and launches, an
        engine's scheduler); it follows the host core's speed (35-54% between runs on one machine)."""
        said = "input_len" in params.model_fields_set  # a published figure may not say its prompt's length
        prompt = params.input_len if said else None
        return metric in ("ttft_ms", "prefill_tokens_per_s") and isinstance(prompt, int) and prompt <= SHORT_PROMPT

    def projected_composites(
        self, metrics: dict[str, MetricResult], time_factor: Callable[[Bound], float]
    ) -> dict[str, float]:
        """E2E = TTFT + decode time: each part scales with its own bound; output tok/s follows E2E."""
        e2e, ttft = metrics.get("e2e_ms"), metrics.get("ttft_ms")
        if e2e is None or ttft is None:
            return {}
        new_e2e = ttft.value * time_factor("compute") + (e2e.value - ttft.value) * time_factor("memory")
        out = {"e2e_ms": new_e2e}
        tps = metrics.get("output_tokens_per_s")
        if tps is not None and new_e2e > 0:
            out["output_tokens_per_s"] = tps.value * e2e.value / new_e2e
        return out


@SCENARIOS.register("generate")
class GenerateScenario(Scenario[GenerateParams]):
    charts = Charts(sweep_axes=("batch_size",), metric_axes={"ttft_ms": "input_len"})
    Params = GenerateParams
    # the accuracy metrics are recorded by quality cases only (a case shows the ones it has)
    headline = ("decode_tokens_per_s", "ttft_ms", "tpot_ms", "roofline_efficiency", "perplexity", "perplexity_increase",
                "task_accuracy")
    engine_slot = EngineSlot(InferenceEngine, default="hf")
    Info = StepInfo
    replicable = True  # one engine per GPU side by side, against one over them all (placement.replicas)

    @property
    def inference(self) -> InferenceEngine:
        if not isinstance(self.engine, InferenceEngine):
            raise RuntimeError("a generate case runs on an inference engine: its [engine] table names one")
        return self.engine

    # prefill is matrix math over the whole prompt; each decode step reads every weight once
    reading = GenerateReading({
        "ttft_ms": "compute",
        "prefill_tokens_per_s": "compute",
        "tpot_ms": "memory",
        "itl_ms": "memory",
        "decode_tokens_per_s": "memory",
        "roofline_efficiency": "memory",
    })
    description = "generation latency/throughput, memory, energy, roofline and accuracy vs bf16"

    def skip_reason(self, params: GenerateParams, device: DeviceInfo) -> str | None:
        engine = self.inference
        why = engine.unsupported_reason(_load_options(params), device)
        if why:
            return why
        if not TIMING & engine.capabilities:
            return f"engine {engine.name!r} reports no generation timing: {engine.lacks(TIMING)}"
        return _memory_reason(params, device) if Capability.CONVERT in engine.capabilities else None

    def host_exclusive(self, params: GenerateParams) -> str | None:
        """An eager engine in this process launches every kernel of every step from Python: its decode rate
        is the host's launch speed (CPU time per step above the GPU's), which a neighbour's load moves
        even on cores of its own (shared caches, memory bandwidth, the package's clock)."""
        engine = self.inference
        if engine.in_process and getattr(engine.options, "mode", None) == "eager":
            return f"engine {engine.name!r} in mode eager: its decode runs at the host's launch speed"
        return None

    def estimate_s(self, params: GenerateParams, rule: StopRule) -> float:
        """Build + compile + warm-up and timed iterations, from the roofline of a typical
        data-centre GPU (2 TB/s, 400 TFLOP/s): a rough guide for --dry-run, not a prediction."""
        if params.model is None:
            return 60.0 + rule.min_seconds
        shape = PRESETS[params.model].shape()
        p = prec.get(params.precision)
        bound = roofline.generation_bound(
            shape,
            roofline.Ceiling(2.0, 400.0, "typical"),
            batch=params.batch_size,
            input_len=params.input_len,
            output_len=params.output_len,
            weight_bits=p.bits,
            elem_bytes=roofline.act_bytes(params.precision),
        )
        per_iter = 2.0 * (bound.prefill_s + bound.decode_step_s * params.output_len) + 0.005 * params.output_len
        build = 3.0 + shape.params / 2e9
        compile_s = 60.0 if self.inference.options.mode == "compiled" else 0.0
        timed = max(rule.min_seconds, rule.min_iters * per_iter)
        return build + compile_s + (rule.warmup_iters + 1) * per_iter + timed

    def share_key(self, params: GenerateParams, device: DeviceInfo) -> str | None:
        """The engine's session key (InferenceEngine.session_key) for cases that load the model at their
        own precision; a case that converts in this process (reference logits in bf16 first) loads its
        own, since its session is the bf16 one until it converts."""
        engine = self.inference
        if _converts_here(params, engine):
            return None
        key = engine.session_key(_model_ref(params), _load_options(params), device)
        return None if key is None else f"{engine.name}:{key}"

    def run(self, params: GenerateParams, ctx: CaseContext) -> None:
        engine = ctx.engine(InferenceEngine)
        # an engine that converts in place is loaded in bf16 first, for reference logits of the same weights
        convert_here = _converts_here(params, engine)
        options = _load_options(params, REFERENCE if convert_here else params.precision)
        key = self.share_key(params, ctx.device) if ctx.shared is not None else None
        kept = ctx.shared.get(key) if ctx.shared is not None and key is not None else None
        if kept is not None:  # the group's earlier case loaded this very session: no build here
            session, loaded_by = kept
            ctx.info["session"] = f"shared: loaded by case {loaded_by} earlier in this process"
        else:
            ctx.progress(0.0, "building the model")
            t0 = time.perf_counter()
            session = engine.load(_model_ref(params), options, ctx.device)
            ctx.info["build_s"] = round(time.perf_counter() - t0, 3)
            if ctx.shared is not None and key is not None:
                ctx.shared.keep(key, session, ctx.case_id)
                ctx.info["session"] = "loaded by this case, kept for the next cases of its share group"
        try:
            self._run_session(params, ctx, engine, session, convert_here)
        finally:
            if key is None or ctx.shared is None:  # a kept session ends with its group (SharedSessions.close_all)
                session.close()

    def _run_session(
        self, params: GenerateParams, ctx: CaseContext, engine: InferenceEngine, session: GenerationSession,
        convert_here: bool,
    ) -> None:
        dev = ctx.device
        limit = session.max_positions()
        if limit is not None and params.input_len + params.output_len > limit:
            raise Skip(
                f"input_len + output_len = {params.input_len + params.output_len} exceeds the model's {limit} positions"
            )
        shape = session.shape()
        ctx.info["params"] = shape.params
        quality = None
        if params.quality:
            from llmbench.scenarios import generate_quality

            quality = generate_quality.prepare(_model_ref(params), params, ctx, session)
            if convert_here:
                ctx.progress(0.0, f"applying {params.precision}")
                session.convert(params.precision)
        elif convert_here:
            self._convert_with_accuracy(params, ctx, session)
        elif params.precision != REFERENCE:
            ctx.info["accuracy_reference"] = (
                f"not measured: engine {engine.name!r} loads the model at {params.precision} "
                "(no bf16 logits of the same weights to compare with)"
            )

        from llmbench.models.build import synthetic_ids

        ids = synthetic_ids(session.vocab_size, params.batch_size, params.input_len, dev.torch_device, SEED)
        session.prepare(params.output_len)
        compiled = engine.options.mode == "compiled"
        ctx.progress(0.0, "compiling" if compiled else "first call")
        cache_before, phases_before = compile_cache.counts(), compile_cache.phase_totals()
        t0 = time.perf_counter()
        session.generate(ids)
        ctx.sync()
        first_call_s = time.perf_counter() - t0
        ctx.record_value("compile_s", first_call_s)
        session.verify()
        ctx.info.update(session.info())
        ctx.code_path.update(session.code_path())
        if compiled and engine.in_process:
            ctx.info.update(compile_cache.state(cache_before, compile_cache.counts()))
            if spent := compile_cache.phases(phases_before, compile_cache.phase_totals(), first_call_s):
                ctx.info["compile_phases_s"] = spent

        per_token = Capability.TOKEN_TIMESTAMPS in engine.capabilities
        clock = TokenClock(cuda=dev.is_cuda and session.token_clock == "stream")
        requests: list[list[RequestTiming]] = []
        cpu_s: list[float] = []

        def one_generate() -> None:
            c0 = time.thread_time()
            clock.begin()
            out = session.generate(ids, on_token=clock.stamp if per_token else None)
            clock.end()
            cpu_s.append(time.thread_time() - c0)
            if not per_token:
                if not out.requests:
                    raise RuntimeError(f"engine {engine.name!r} returned no request timings")
                requests.append(out.requests)

        ctx.reset_peak_memory()
        m = ctx.measure(one_generate, host_probe=engine.in_process)
        if per_token:
            ctx.info["timing"] = "per token: a timestamp as each token's logits are ready"
            per_iter = self._record_tokens(params, ctx, clock.seconds(m.iters))
        else:
            ctx.info["timing"] = (
                "request-level: the engine reports each request's TTFT and E2E, not per-token times; "
                "TPOT = (E2E - TTFT) / (N - 1) per request, no ITL"
            )
            per_iter = self._record_requests(params, ctx, requests[-m.iters:], clock.seconds(m.iters))
        ctx.record_monitors(m, units_per_iter=params.batch_size * params.output_len, energy_metric="energy_j_per_token",
                            torch_memory=engine.in_process)
        cpu_step = statistics.median(cpu_s[-m.iters :]) / params.output_len
        gpu_step = None
        if dev.is_cuda and Capability.PARTIAL_GENERATE in engine.capabilities and session.token_clock == "stream":
            try:
                step = _decode_profile(session, ids, params.output_len)
                gpu_step = step.busy_s
                ctx.info["gpu_kernels_per_step"] = round(step.kernels, 1)
                ctx.info["gpu_top_kernels_ms_per_step"] = {n[:100]: round(t * 1e3, 4) for n, t in step.top(6)}
                ctx.code_path["top_kernels"] = [n[:100] for n, _ in step.top(6)]
            except Exception as e:  # recorded: a diagnosis's problem must not cost the case its measurements
                ctx.info["gpu_busy_error"] = f"{type(e).__name__}: {e}"[:300]
        ctx.info["cpu_ms_per_step"] = cpu_step * 1e3
        if gpu_step is not None:
            ctx.info["gpu_busy_ms_per_step"] = gpu_step * 1e3
        self._roofline(params, ctx, shape, per_iter, cpu_step, gpu_step)
        if quality is not None:  # after the timed window: the same session, its speed already measured
            from llmbench.scenarios import generate_quality

            generate_quality.record(quality, params, ctx, engine, session)

    # -- parts of run ----------------------------------------------------------------------------
    def _convert_with_accuracy(self, params: GenerateParams, ctx: CaseContext, session: GenerationSession) -> None:
        """Reference logits in bf16 on a fixed batch BEFORE converting, then the same batch again."""
        from llmbench.models.accuracy import logits_agreement
        from llmbench.models.build import synthetic_ids

        ctx.progress(0.0, "bf16 reference logits")
        length = min(PROBE_SHAPE[1], session.max_positions() or PROBE_SHAPE[1])
        probe = synthetic_ids(session.vocab_size, PROBE_SHAPE[0], length, ctx.device.torch_device, SEED + 1)
        ref = session.logits(probe)
        ctx.progress(0.0, f"applying {params.precision}")
        session.convert(params.precision)
        for name, value in logits_agreement(ref, session.logits(probe)).items():
            ctx.record_value(name, value)
        ctx.info["accuracy_reference"] = (
            f"{REFERENCE} logits of the same weights on a fixed {PROBE_SHAPE[0]}x{length} synthetic batch"
            + ("; random weights: numeric error, not task quality" if params.weights == "random" else "")
        )
        del ref

    def _record_requests(
        self, params: GenerateParams, ctx: CaseContext, requests: list[list[RequestTiming]], runs: list[list[float]]
    ) -> list[TokenMetrics]:
        """Request-level figures: each iteration's TTFT is when its last request got a first token,
        its E2E the call's own time; per-request TTFT and TPOT distributions are kept too."""
        per_iter = []
        for reqs, r in zip(requests, runs, strict=True):
            for q in reqs:
                if q.output_tokens != params.output_len:
                    raise RuntimeError(f"a request produced {q.output_tokens} tokens; {params.output_len} were asked")
            ttft = max(q.ttft_s for q in reqs)
            per_iter.append(token_metrics(0.0, [ttft, r[-1]], r[-1], batch=params.batch_size,
                                          input_len=params.input_len, count=params.output_len))
        for name in ("ttft_ms", "e2e_ms", "prefill_tokens_per_s", "decode_tokens_per_s", "output_tokens_per_s"):
            ctx.record(name, [getattr(t, name) for t in per_iter])
        ctx.record("tpot_ms", [(q.e2e_s - q.ttft_s) / (q.output_tokens - 1) * 1e3 for reqs in requests for q in reqs])
        return per_iter

    def _record_tokens(self, params: GenerateParams, ctx: CaseContext, runs: list[list[float]]) -> list[TokenMetrics]:
        per_iter = []
        for r in runs:
            if len(r) != params.output_len + 2:
                raise RuntimeError(f"{len(r) - 2} token timestamps for {params.output_len} tokens: a token was missed")
            per_iter.append(token_metrics(r[0], r[1:-1], r[-1], batch=params.batch_size, input_len=params.input_len))
        for name in (
            "ttft_ms",
            "tpot_ms",
            "e2e_ms",
            "prefill_tokens_per_s",
            "decode_tokens_per_s",
            "output_tokens_per_s",
        ):
            ctx.record(name, [getattr(t, name) for t in per_iter])
        ctx.record("itl_ms", [gap for t in per_iter for gap in t.itl_ms])
        return per_iter

    def _roofline(
        self,
        params: GenerateParams,
        ctx: CaseContext,
        shape: ModelShape,
        per_iter: list[TokenMetrics],
        cpu_step: float,
        gpu_step: float | None,
    ) -> None:
        spec = _spec_for(ctx.device)
        if spec is None:
            ctx.info["roofline"] = f"no spec for {ctx.device.name}: roofline_efficiency not recorded"
            return
        ceiling = roofline.ceiling_for(spec, params.precision, measured_copy_tb_s(spec.slug))
        ceiling = ceiling.over(self.inference.options.tensor_parallel)  # tensor parallel: each GPU reads its shard
        bound = roofline.generation_bound(
            shape,
            ceiling,
            batch=params.batch_size,
            input_len=params.input_len,
            output_len=params.output_len,
            weight_bits=prec.get(params.precision).bits,
            elem_bytes=roofline.act_bytes(params.precision),
        )
        eff = [bound.decode_step_s / (t.tpot_ms / 1e3) for t in per_iter]
        tpot_s = statistics.median(t.tpot_ms for t in per_iter) / 1e3
        flags = roofline.diagnose(
            statistics.median(eff),
            tpot_s=tpot_s,
            bound_s=bound.decode_step_s,
            cpu_step_s=cpu_step,
            gpu_step_s=gpu_step,
            batch=params.batch_size,
            eager=getattr(self.inference.options, "mode", None) == "eager",
        )
        ctx.record("roofline_efficiency", eff, flags)
        ctx.info.update(bound.as_info(), gpu_spec=spec.slug)
        floor_flag = prefill_floor_flag(statistics.median(t.ttft_ms for t in per_iter) / 1e3, bound.prefill_s)
        if floor_flag and "ttft_ms" in ctx.metrics:
            ctx.metrics["ttft_ms"].flags.append(floor_flag)
            ctx.info["ttft_flag"] = floor_flag
        if flags:
            ctx.info["roofline_flag"] = flags[0]


FLOOR_MARGIN = 0.9  # the floor is at the datasheet peak: nothing computes a full prefill faster


def prefill_floor_flag(ttft_s: float, prefill_bound_s: float) -> str | None:
    """A TTFT under the prefill's compute floor (the prompt's FLOPs at the datasheet peak) did not
    compute the whole prompt: an engine reused a cached prefix, or the timestamps are wrong. Such a
    figure must not be compared with a real prefill, so it is flagged."""
    if ttft_s >= prefill_bound_s * FLOOR_MARGIN:
        return None
    return (f"TTFT {ttft_s * 1e3:.3g} ms is under the prefill's compute floor {prefill_bound_s * 1e3:.3g} ms "
            "(the prompt's FLOPs at the datasheet peak): the prompt was not computed in full (a cached prefix?)")


def _spec_for(device: DeviceInfo) -> GpuSpec | None:
    return match_name(device.name, device.memory_gib) if device.is_cuda else None


TIMING = frozenset({Capability.TOKEN_TIMESTAMPS, Capability.REQUEST_METRICS})  # generate needs one of them


def _converts_here(params: GenerateParams, engine: type[InferenceEngine] | InferenceEngine) -> bool:
    """The case loads bf16, takes reference logits and converts to its precision in this process."""
    return params.precision != REFERENCE and {Capability.LOGITS, Capability.CONVERT} <= engine.capabilities


def _model_ref(params: GenerateParams) -> ModelRef:
    return ModelRef(params.model, params.pretrained, params.weights, SEED)


def _load_options(params: GenerateParams, precision: str | None = None) -> LoadOptions:
    """The load options of a case. Its size tells engines that size themselves (vLLM's max_model_len
    and batch slots, CUDA-graph sizes) what the case needs; engines that do not, ignore it."""
    size = CaseSize(max_batch=params.batch_size, max_model_len=params.input_len + params.output_len,
                    output_len=params.output_len,
                    max_positions=PRESETS[params.model].max_positions if params.model is not None else None)
    return LoadOptions(precision=precision or params.precision, size=size)


def _memory_reason(params: GenerateParams, device: DeviceInfo) -> str | None:
    """A preset whose bf16 build cannot fit this GPU (the model is built in bf16, the reference
    logits taken, then it is converted; fp32/tf32 need 4 bytes per parameter)."""
    if params.model is None or not device.is_cuda or not device.memory_gib:
        return None
    per_param = 4 if roofline.act_bytes(params.precision) == 4 else 2
    need = PRESETS[params.model].shape().params * per_param / 2**30
    if need > 0.95 * device.memory_gib:
        return (
            f"{params.model} needs about {need:.0f} GiB for its weights before conversion to "
            f"{params.precision} "
            f"(built in {'fp32' if per_param == 4 else 'bf16'}); this GPU has {device.memory_gib:.0f} GiB"
        )
    return None


def _decode_profile(session: Any, ids: Any, output_len: int) -> StepProfile:
    """GPU kernel time of one decode step, from two short profiled generate()s outside the timed
    window (llmbench.measure.kernel_profile: the difference cancels the prefill)."""
    long = min(output_len, PROFILE_TOKENS)
    short = max(1, long // 4)
    return decode_step_profile(lambda n: session.generate(ids, tokens=n).tokens, short, long)
