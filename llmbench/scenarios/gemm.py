"""gemm: matmul throughput (TFLOP/s) per precision and shape — the compute ceiling of a device."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import field_validator, model_validator

from llmbench import precision as prec
from llmbench.hardware import roofline
from llmbench.hardware.fingerprint import cpu_native_matmul
from llmbench.hardware.roofline import Bound
from llmbench.hardware.specs import GpuSpec
from llmbench.measure.timing import StopRule
from llmbench.precision import DeviceInfo, unsupported_reason
from llmbench.scenarios.base import SCENARIOS, CaseContext, Charts, Scenario, ScenarioParams
from llmbench.scenarios.reading import Reading

# The gemm precisions: the shared precision axis's float names, plus two that exist only as matmul
# ceilings and are gated here: fp64 (Hopper runs DGEMM on FP64 tensor cores) and int8 (torch._int_mm,
# int8 x int8 -> int32; the "int8" of llmbench.precision is a weight-only scheme, not this).
GemmPrecision = Literal["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"]
GEMM_ONLY = ("fp64", "int8")
INT8_MIN_CC = (7, 5)  # cuBLASLt integer tensor-core GEMM (Turing+)
GEMM_ONLY_BYTES = {"fp64": 8, "int8": 1}  # operand bytes of the gemm-only names (the rest: llmbench.precision)


def int8_shape_reason(shape: tuple[int, int, int]) -> str | None:
    """torch._int_mm's shape rules: M > 16, K and N multiples of 8."""
    m, n, k = shape
    if m <= 16 or k % 8 or n % 8:
        return (f"int8 matmul (torch._int_mm) needs M > 16 and K, N multiples of 8; got M={m}, N={n}, K={k}")
    return None


def gemm_only_reason(precision: str, shape: tuple[int, int, int], device: DeviceInfo) -> str | None:
    """Why fp64 or int8 gemm cannot run here; None if it can."""
    if precision == "fp64":
        return None  # every device has float64 (slowly where there are no FP64 units)
    if device.is_cuda and device.cc is not None and device.cc < INT8_MIN_CC:
        return (f"int8 matmul needs compute capability >= {INT8_MIN_CC[0]}.{INT8_MIN_CC[1]} (integer tensor cores); "
                f"this GPU is {device.cc[0]}.{device.cc[1]} ({device.name})")
    return int8_shape_reason(shape)
L2_SCALE_BYTES = 50_000_000  # about the L2 of Hopper GPUs (H100 50 MB, H200 60 MB)


class GemmParams(ScenarioParams):
    precision: GemmPrecision = "bf16"
    shape: tuple[int, int, int] = (4096, 4096, 4096)  # M, N, K: C[M,N] = A[M,K] @ B[K,N]

    @field_validator("shape")
    @classmethod
    def _positive(cls, v: tuple[int, int, int]) -> tuple[int, int, int]:
        if min(v) < 1:
            raise ValueError(f"shape dimensions must be >= 1, got {list(v)}")
        return v

    @model_validator(mode="after")
    def _fp8_alignment(self) -> GemmParams:
        if self.precision == "fp8" and any(d % 16 for d in self.shape):
            raise ValueError(
                f"fp8 matmul (torch._scaled_mm) needs every dimension a multiple of 16, got {list(self.shape)}"
            )
        return self


class GemmReading(Reading[GemmParams]):
    """A gemm multiplies at its own precision, memory-bound only as a skinny product under the ridge point."""

    def compute_precision(self, params: GemmParams) -> str:
        return str(params.precision)  # a gemm multiplies in its own precision

    def bound(self, params: GemmParams, metric: str, spec: GpuSpec) -> Bound | None:
        """A GEMM is memory-bound when its arithmetic intensity (2MNK FLOPs over the bytes of A, B and C)
        is under the GPU's ridge point (peak FLOP/s over bandwidth) and its operands do not fit in L2:
        decode-shaped skinny products against a weight matrix are."""
        shape, precision = params.shape, str(params.precision)
        peak = spec.peak(precision)
        if metric != "tflops" or not shape or len(shape) != 3 or not peak:
            return super().bound(params, metric, spec)
        m, n, k = (int(d) for d in shape)
        elem = GEMM_ONLY_BYTES.get(precision) or prec.get(precision).bits / 8
        out_elem = 2 if precision == "fp8" else elem  # fp8 products are written in bf16
        bytes_moved = (m * k + k * n) * elem + m * n * out_elem
        intensity = 2.0 * m * n * k / bytes_moved
        ridge = peak * 1e12 / (spec.bandwidth_tb_s * 1e12)
        # operands that fit in the L2 cache are not limited by device memory (a 1024^3 product is
        # latency-bound, not bandwidth-bound): only larger ones under the ridge scale with bandwidth
        return "memory" if intensity < ridge and bytes_moved > L2_SCALE_BYTES else "compute"


@SCENARIOS.register("gemm")
class Gemm(Scenario[GemmParams]):
    charts = Charts(sweep_axes=("shape",))
    Params = GemmParams
    headline = ("tflops",)
    reading = GemmReading({"*": "compute"})
    description = "Matmul TFLOP/s per precision and shape (random inputs; 2*M*N*K FLOPs per product)"

    def skip_reason(self, params: GemmParams, device: DeviceInfo) -> str | None:
        if params.precision in ("fp16", "bf16") and not device.is_cuda:
            return emulated_reason(params.precision, params.shape)
        if params.precision in ("fp32", "fp16", "bf16"):
            return None
        if params.precision in GEMM_ONLY:
            return gemm_only_reason(params.precision, params.shape, device)
        return unsupported_reason(params.precision, device)

    def estimate_s(self, params: GemmParams, rule: StopRule) -> float:
        return rule.min_seconds + 1.0

    def run(self, params: GemmParams, ctx: CaseContext) -> None:

        m, n, k = params.shape
        fn, a, b, out = matmul(params.precision, m, n, k, ctx.device.torch_device)
        if params.precision == "int8":
            ctx.info["unit_note"] = "int8: tflops counts integer operations (TOPS), int32 accumulate"
        ctx.progress(0.0, "checking the result")
        ctx.record_value("rel_error_vs_fp32", _rel_error(a, b, fn, out))
        ctx.reset_peak_memory()
        meas = ctx.measure(fn)
        flops = 2.0 * m * n * k
        ctx.record("tflops", [flops / t / 1e12 for t in meas.samples_s])
        ctx.record_monitors(meas)
        ctx.info["flops_per_iter"] = flops
        ctx.code_path.update(call=CALLS.get(params.precision, "torch.matmul(A, B, out=C)"),
                             tf32=params.precision == "tf32")


# The call each precision times (CaseResult.code_path): what a comparison must hold equal.
CALLS = {
    "fp8": "torch._scaled_mm(e4m3 A, e4m3 B column-major, per-tensor scales) -> bf16; operands cast before timing",
    "int8": "torch._int_mm(int8 A, int8 B column-major) -> int32",
}


def matmul(precision: str, m: int, n: int, k: int, dev: str) -> tuple[Any, Any, Any, Any]:
    """(fn, A, B, C): random operands of `precision` and the call C = A @ B (fixed seed); sets the
    TF32 switches for this precision."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    gen = torch.Generator(device=dev).manual_seed(0)
    if precision == "int8":
        a = torch.randint(-128, 128, (m, k), device=dev, dtype=torch.int8, generator=gen)
        b = torch.randint(-128, 128, (k, n), device=dev, dtype=torch.int8, generator=gen)
        fn, out = _int8_matmul(a, b)
        return fn, a, b, out
    # fp8 operands are cast from bf16 inside the timed call (_fp8_matmul), as a real fp8 layer does
    name = "float64" if precision == "fp64" else "bfloat16" if precision == "fp8" else prec.get(precision).dtype
    dtype = getattr(torch, name)
    a = torch.randn(m, k, device=dev, dtype=dtype, generator=gen)
    b = torch.randn(k, n, device=dev, dtype=dtype, generator=gen)
    if precision == "fp8":
        fn, out = _fp8_matmul(a, b)
    else:
        c = torch.empty(m, n, device=dev, dtype=dtype)

        def fn() -> Any:
            return torch.matmul(a, b, out=c)

        out = c
    return fn, a, b, out


def _fp8_matmul(a: Any, b: Any) -> tuple[Any, Any]:
    """e4m3 operands with per-tensor scales through torch._scaled_mm (B column-major, as required)."""
    import torch

    f8 = torch.float8_e4m3fn
    fmax = torch.finfo(f8).max
    sa = (a.abs().amax().float() / fmax).clamp(min=1e-12)
    sb = (b.abs().amax().float() / fmax).clamp(min=1e-12)
    a8 = (a.float() / sa).to(f8)
    b8 = (b.float() / sb).to(f8).t().contiguous().t()
    out = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=torch.bfloat16)

    def fn() -> Any:
        return torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, out=out)

    return fn, out


def _int8_matmul(a: Any, b: Any) -> tuple[Any, Any]:
    """int8 x int8 -> int32 through torch._int_mm (B column-major, the layout cuBLASLt wants)."""
    import torch

    b_col = b.t().contiguous().t()
    out = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=torch.int32)

    def fn() -> Any:
        return torch._int_mm(a, b_col, out=out)

    return fn, out


def _rel_error(a: Any, b: Any, fn: Any, out: Any) -> float:
    """||C - ref|| / ||ref|| on the first rows, against a float32 (TF32 off) reference."""
    import torch

    fn()
    rows = min(a.shape[0], 256)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        ref = a[:rows].double() @ b.double() if a.dtype == torch.float64 else a[:rows].float() @ b.float()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    got = out[:rows].double() if a.dtype == torch.float64 else out[:rows].float()
    if not torch.isfinite(got).all():
        return float("inf")
    return float((got - ref).norm() / ref.norm())


def measured_peak_tflops(slug: str, precision: str, results_dir: Path | None = None) -> roofline.Measured | None:
    """Matmul peak of `precision` from the newest ceilings result set of the GPU `slug`, found as
    `measured_copy_tb_s` finds its set (the best of its shapes: the ceiling); None when there is none
    (use the spec table)."""
    return roofline.best_measured(slug, Gemm.name, "tflops", {"precision": precision}, results_dir)


EMULATED_MAX_MACS = 256**3  # the largest product an emulated half-precision CPU matmul is run at


def emulated_reason(precision: str, shape: tuple[int, ...]) -> str | None:
    """A half-precision product larger than 256^3 on a CPU that emulates that precision in software
    measures the emulation, slowly enough to time the quickstart out: skipped with the reason; small
    ones still run (tests)."""
    m, n, k = shape
    if cpu_native_matmul(precision) or m * n * k <= EMULATED_MAX_MACS:
        return None
    return (f"{precision} matmul on this CPU is emulated in software (no native {precision} instructions such as "
            f"AVX512/AMX-{precision.upper()}): a {m}x{n}x{k} product measures the emulation, slowly; run it on a GPU")
