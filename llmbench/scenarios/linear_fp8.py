"""linear_fp8: one linear layer (or a Llama MLP block) in fp8 against bf16, at the GEMM shapes of real models.

Every case measures its impl AND the bf16 nn.Linear baseline on the same inputs and weights, so
`speedup_vs_bf16` is a ratio of two medians from one process (with a bootstrap interval from both
sample sets), and `rel_error_vs_fp32` compares against an fp32 reference of the same weights. Beside
the measurement, a roofline (llmbench.hardware.linear_roofline) predicts the time and the speedup at
the GPU's measured ceilings, casts to fp8 and kernel launches included.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import field_validator, model_validator

from llmbench.hardware import linear_roofline as lr
from llmbench.hardware.roofline import Bound
from llmbench.hardware.specs import GpuSpec, match_name
from llmbench.measure.stats import median_ratio_ci
from llmbench.measure.timing import StopRule
from llmbench.models.presets import PRESETS, known_preset
from llmbench.precision import DeviceInfo
from llmbench.results import Stats
from llmbench.scenarios import fp8_impls
from llmbench.scenarios.bandwidth import measured_copy_tb_s
from llmbench.scenarios.base import SCENARIOS, CaseContext, Charts, Scenario, ScenarioParams, Skip
from llmbench.scenarios.gemm import measured_peak_tflops
from llmbench.scenarios.reading import Reading

Impl = Literal[
    "bf16", "te-delayed", "te-current", "te-block", "te-mxfp8", "te-nvfp4",
    "torchao-tensorwise", "torchao-rowwise", "scaled-mm", "scaled-mm-percall-weight",
]
Proj = Literal["q", "k", "v", "o", "qkv", "gate", "up", "gate_up", "down", "mlp"]
REF_ROWS = 256  # rows of the output checked against fp32 (rows are independent: a sample is enough)
LAUNCH_PROBE_CALLS = 200

RATIO_CI = "bootstrap (percentile, ratio of medians)"  # the interval of a speedup over bf16


class LinearFp8Params(ScenarioParams):
    impl: Impl = "bf16"
    pass_: Literal["fwd", "fwd_bwd"] = "fwd"
    model: str | None = None  # a preset of llmbench/models/presets.py; with `proj`
    proj: Proj | None = None  # the projection of `model` ("mlp": the whole gate/up/down block)
    tokens: int = 1024  # M: tokens in the batch (batch x sequence)
    # (M, N, K) instead of model/proj; with proj="mlp": (M, intermediate, hidden)
    shape: tuple[int, int, int] | None = None
    # auto: as the impl's users run it (torchao compiled, the others eager; fp8_impls.default_mode); the
    # bf16 baseline runs in the same mode, so the speedup compares like with like
    mode: Literal["auto", "eager", "compiled"] = "auto"

    added_later: ClassVar[frozenset[str]] = frozenset({"mode"})

    @property
    def run_mode(self) -> str:
        return fp8_impls.default_mode(self.impl) if self.mode == "auto" else self.mode

    _known_model = field_validator("model")(known_preset)

    @model_validator(mode="after")
    def _one_shape(self) -> LinearFp8Params:
        if self.tokens < 1:
            raise ValueError(f"tokens must be >= 1, got {self.tokens}")
        if self.shape is not None:
            if self.model is not None:
                raise ValueError("give either shape = [M, N, K] or model + proj, not both")
            if min(self.shape) < 1:
                raise ValueError(f"shape dimensions must be >= 1, got {list(self.shape)}")
        elif self.model is None or self.proj is None:
            raise ValueError(
                "linear_fp8 needs model + proj (e.g. model = 'llama-3-8b', proj = 'down') or shape = [M, N, K]")
        return self

    @property
    def is_mlp(self) -> bool:
        return self.proj == "mlp"

    def dims(self) -> tuple[int, int, int]:
        """(M, N, K) of the layer; for the MLP block (M, intermediate, hidden)."""
        if self.shape is not None:
            return self.shape
        p = PRESETS[self.model or ""]
        if self.proj == "mlp":
            return self.tokens, p.intermediate, p.hidden
        n, k = lr.projection_nk(self.proj or "", hidden=p.hidden, heads=p.heads, kv_heads=p.kv_heads,
                                head_dim=p.head_dim, intermediate=p.intermediate)
        return self.tokens, n, k


def kernels(params: LinearFp8Params, impl: str) -> list[lr.Kernel]:
    m, n, k = params.dims()
    once = fp8_impls.weight_once(impl, params.pass_)
    if params.is_mlp:
        return lr.mlp_kernels(m, k, n, impl, params.pass_, once)
    return lr.linear_kernels(m, n, k, impl, params.pass_, once)


def impl_reason(impl: str, device: DeviceInfo, dims: tuple[int, int, int],
                importable: Any = fp8_impls.importable) -> str | None:
    """Why `impl` cannot run here (device, capability, shape alignment, package); None if it can."""
    need = fp8_impls.min_cc(impl)
    if need is not None:
        cc_text = f"compute capability >= {need[0]}.{need[1]}"
        if not device.is_cuda:
            return f"{impl} needs an NVIDIA GPU with {cc_text}; this machine has no CUDA GPU (running on {device.name})"
        if device.cc is not None and device.cc < need:
            blackwell = " (Blackwell)" if need >= (10, 0) else ""
            return f"{impl} needs {cc_text}{blackwell}; this GPU is {device.cc[0]}.{device.cc[1]} ({device.name})"
        align = 32 if impl in ("te-mxfp8", "te-nvfp4") else 16
        if any(d % align for d in dims):
            return f"{impl} needs M, N and K multiples of {align} (fp8 GEMM alignment); got {list(dims)}"
    pkg = fp8_impls.package_of(impl)
    if pkg is not None and not importable(pkg[0]):
        return f"{impl} needs the Python package {pkg[0]!r}, which is not installed: {pkg[1]}"
    return None


class LinearFp8Reading(Reading[LinearFp8Params]):
    """Which ceiling binds a layer follows its token count, from the roofline's kernels."""

    def bound(self, params: LinearFp8Params, metric: str, spec: GpuSpec) -> Bound | None:
        """Small token counts are memory-bound (weights and casts), large ones compute-bound: which,
        from the roofline's kernels on `spec`."""
        if metric not in self.bounds:
            return None
        roof = lr.Roof(dict(spec.tflops), spec.bandwidth_tb_s)
        ks = kernels(params, params.impl)
        compute = sum(k.flops / ((roof.peak_tflops.get(k.peak_key) or roof.peak_tflops["bf16"]) * 1e12)
                      for k in ks if k.peak_key != "memory")
        memory = sum(k.bytes for k in ks) / (roof.bandwidth_tb_s * 1e12)
        return "compute" if compute >= memory else "memory"


@SCENARIOS.register("linear_fp8")
class LinearFp8(Scenario[LinearFp8Params]):
    charts = Charts(sweep_axes=("tokens", "shape"))
    Params = LinearFp8Params
    headline = ("speedup_vs_bf16", "tflops", "rel_error_vs_fp32", "gemm_only_speedup_vs_bf16")
    description = ("A linear layer or Llama MLP at real models' GEMM shapes: fp8 (Transformer Engine, torchao, "
                   "torch._scaled_mm) against bf16 in the same case and mode, the GEMMs alone beside it, "
                   "with a roofline prediction")
    reading = LinearFp8Reading({"fwd_ms": "compute", "fwd_bwd_ms": "compute", "tflops": "compute"})

    def skip_reason(self, params: LinearFp8Params, device: DeviceInfo) -> str | None:
        return fp8_impls.mode_reason(params.impl, params.run_mode) or impl_reason(params.impl, device, params.dims())

    def estimate_s(self, params: LinearFp8Params, rule: StopRule) -> float:
        return 2 * rule.min_seconds + 5.0

    def run(self, params: LinearFp8Params, ctx: CaseContext) -> None:
        import torch

        dev = ctx.device.torch_device
        m, n, k = params.dims()
        if ctx.device.is_cuda:
            torch.backends.cuda.matmul.allow_tf32 = False
        gen = torch.Generator(device=dev).manual_seed(0)
        torch.manual_seed(0)
        base = fp8_impls.baseline("mlp" if params.is_mlp else "linear", (m, n, k), dev, torch.bfloat16)
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16, generator=gen)
        out_dim = k if params.is_mlp else n
        dy = torch.randn(m, out_dim, device=dev, dtype=torch.bfloat16, generator=gen)

        ctx.progress(0.0, f"building {params.impl}")
        try:
            mod, autocast = fp8_impls.build(params.impl, base, params.pass_)
        except ImportError as e:
            raise Skip(f"{params.impl} could not be imported ({e}); see the install command in the docs") from e
        mode = params.run_mode
        ctx.code_path.update(fp8_impls.code_path(params.impl, params.pass_, mode))
        timed_base, eager_mod = base, mod
        if mode == "compiled":
            timed_base, mod = torch.compile(base), torch.compile(mod)
        bwd = params.pass_ == "fwd_bwd"
        fn_base = _step(timed_base, x, dy, bwd, None)
        fn_impl = _step(mod, x, dy, bwd, autocast)
        if mode == "compiled":  # compile what will be timed before anything is (and count what it cost)
            for name, fn in [("compile_s", fn_impl)] + ([("compile_s_bf16", fn_base)] if params.impl != "bf16" else []):
                t0 = time.perf_counter()
                fn()
                ctx.sync()
                ctx.info[name] = round(time.perf_counter() - t0, 3)

        ctx.progress(0.0, "checking against fp32")
        ref = _fp32_reference(base, x[:REF_ROWS])
        # on the module before compilation: a second input shape through the compiled one would make
        # dynamo recompile it with a dynamic M, and that slower graph is what the timed calls would run
        ctx.record_value("rel_error_vs_fp32", _rel(_forward(eager_mod, x[:REF_ROWS], autocast), ref))
        ctx.info["bf16_rel_error_vs_fp32"] = _rel(_forward(base, x[:REF_ROWS], None), ref)
        ctx.info["rel_error_rows"] = min(m, REF_ROWS)
        del ref

        launch_s = _launch_cost_s(ctx)
        ctx.info["launch_us"] = launch_s * 1e6
        ctx.reset_peak_memory()
        name = "fwd_bwd_ms" if bwd else "fwd_ms"
        ks_impl = kernels(params, params.impl)
        flops = lr.gemm_flops(ks_impl)
        if params.impl != "bf16":
            mb = ctx.measure(fn_base, monitor=False)
            ctx.info["bf16_ms_median"] = float(np.median(mb.samples_s)) * 1e3
        meas = ctx.measure(fn_impl)
        ctx.record(name, [t * 1e3 for t in meas.samples_s])
        ctx.record("tflops", [flops / t / 1e12 for t in meas.samples_s])
        if params.impl != "bf16":
            ratio, lo, hi = median_ratio_ci(mb.samples_s, meas.samples_s)
            ctx.record_value("speedup_vs_bf16", ratio)
            ctx.metrics["speedup_vs_bf16"].stats = Stats(median=ratio, ci95=[lo, hi], n=len(meas.samples_s),
                                                         n_bf16=len(mb.samples_s), ci_method=RATIO_CI)
        ctx.record_monitors(meas)
        ctx.info.update(m=m, n=n, k=k, flops_per_call=flops, kernels_predicted=len(ks_impl))
        if params.impl != "bf16":
            self._gemm_only(params, ctx, (m, n, k))
        self._roofline(params, ctx, launch_s, ks_impl, float(np.median(meas.samples_s)))

    def _gemm_only(self, params: LinearFp8Params, ctx: CaseContext, dims: tuple[int, int, int]) -> None:
        """The pass's GEMMs alone, fp8 (torch._scaled_mm on operands already in e4m3) and bf16: the
        ceiling any implementation's casts and scaling eat into."""
        shapes = fp8_impls.gemm_shapes(params.is_mlp, dims, params.pass_)
        dev = ctx.device.torch_device
        bf16 = ctx.measure(fp8_impls.gemm_only(shapes, False, dev), monitor=False)
        fp8 = ctx.measure(fp8_impls.gemm_only(shapes, True, dev), monitor=False)
        ctx.record("gemm_only_ms", [t * 1e3 for t in fp8.samples_s])
        ratio, lo, hi = median_ratio_ci(bf16.samples_s, fp8.samples_s)
        ctx.record_value("gemm_only_speedup_vs_bf16", ratio)
        ctx.metrics["gemm_only_speedup_vs_bf16"].stats = Stats(
            median=ratio, ci95=[lo, hi], n=len(fp8.samples_s), n_bf16=len(bf16.samples_s), ci_method=RATIO_CI)
        ctx.info["gemm_only"] = {"shapes": [list(s) for s in shapes], "bf16_ms_median": float(np.median(
            bf16.samples_s)) * 1e3, "kernel": "torch._scaled_mm, e4m3 x e4m3, unit scales, bf16 out"}

    def _roofline(self, params: LinearFp8Params, ctx: CaseContext, launch_s: float, ks_impl: list[lr.Kernel],
                  measured_s: float) -> None:
        spec = match_name(ctx.device.name, ctx.device.memory_gib) if ctx.device.is_cuda else None
        if spec is None:
            ctx.info["roofline"] = (f"not predicted: no GPU ceilings for {ctx.device.name}" if ctx.device.is_cuda
                                     else "not predicted on the CPU (the roofline holds GPU ceilings)")
            return
        roof, sources = roof_for(spec, launch_s)
        pred = lr.predict_s(ks_impl, roof)
        ctx.record_value("roofline_ms", pred * 1e3)
        ctx.record_value("roofline_efficiency", pred / measured_s)
        ctx.record_value("predicted_speedup_vs_bf16", lr.predict_s(kernels(params, "bf16"), roof) / pred)
        ctx.info["roofline_ceilings"] = {"peak_tflops": roof.peak_tflops, "bandwidth_tb_s": roof.bandwidth_tb_s,
                                         "launch_us": launch_s * 1e6, "sources": sources, "gpu_spec": spec.slug}


def roof_for(spec: GpuSpec, launch_s: float) -> tuple[lr.Roof, dict[str, str]]:
    """Measured ceilings (the newest ceilings result set of this GPU) where there are some, else the spec table."""
    peaks: dict[str, float] = {}
    sources: dict[str, str] = {}
    for key in ("bf16", "fp8", "fp4"):
        got = measured_peak_tflops(spec.slug, key)
        if got:
            peaks[key], sources[key] = got, "measured (ceilings suite, gemm)"
        elif spec.peak(key):
            peaks[key], sources[key] = float(spec.peak(key) or 0), f"datasheet ({spec.source})"
    bw = measured_copy_tb_s(spec.slug)
    sources["bandwidth"] = "measured (ceilings suite, device copy)" if bw else f"datasheet ({spec.source})"
    return lr.Roof(peaks, bw or spec.bandwidth_tb_s, launch_s), sources


def _step(mod: Any, x: Any, dy: Any, bwd: bool, autocast: Any) -> Any:
    """One timed call: forward (no autograd graph), or forward + backward with fresh gradients."""
    import contextlib

    import torch

    ctx_f = autocast or contextlib.nullcontext
    if not bwd:
        def fwd() -> Any:
            with torch.no_grad(), ctx_f():
                return mod(x)
        return fwd
    xg = x.detach().requires_grad_(True)
    params = [p for p in mod.parameters() if p.requires_grad]

    def fwd_bwd() -> None:
        xg.grad = None
        for p in params:
            p.grad = None
        with ctx_f():
            out = mod(xg)
        out.backward(dy)
    return fwd_bwd


def _forward(mod: Any, x: Any, autocast: Any) -> Any:
    import contextlib

    import torch

    with torch.no_grad(), (autocast or contextlib.nullcontext)():
        return mod(x).float()


def _fp32_reference(base: Any, x: Any) -> Any:
    import copy

    import torch

    ref = copy.deepcopy(base).float()
    with torch.no_grad():
        out = ref(x.float())
    del ref
    return out


def _rel(out: Any, ref: Any) -> float:
    import torch

    if not torch.isfinite(out).all():
        return float("inf")
    return float((out - ref).norm() / ref.norm())


def _launch_cost_s(ctx: CaseContext) -> float:
    """Time per call of a trivial kernel launched back to back: the host's launch cost, the floor of
    every kernel the roofline counts."""
    import torch

    t = torch.zeros(1, device=ctx.device.torch_device)
    for _ in range(10):
        t.add_(1)
    ctx.sync()
    t0 = time.perf_counter()
    for _ in range(LAUNCH_PROBE_CALLS):
        t.add_(1)
    ctx.sync()
    return (time.perf_counter() - t0) / LAUNCH_PROBE_CALLS
