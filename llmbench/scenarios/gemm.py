"""gemm: matmul throughput (TFLOP/s) per precision and shape — the compute ceiling of a device."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import field_validator, model_validator

from llmbench import precision as prec
from llmbench.hardware.roofline import Bound
from llmbench.hardware.specs import GpuSpec
from llmbench.measure.timing import StopRule
from llmbench.precision import DeviceInfo, unsupported_reason
from llmbench.scenarios.base import SCENARIOS, CaseContext, Scenario, ScenarioParams

GemmPrecision = Literal["fp32", "tf32", "fp16", "bf16", "fp8"]
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


@SCENARIOS.register("gemm")
class Gemm(Scenario):
    Params = GemmParams
    headline = ("tflops",)
    bounds: ClassVar[dict[str, Bound]] = {"*": "compute"}
    description = "Matmul TFLOP/s per precision and shape (random inputs; 2*M*N*K FLOPs per product)"

    def skip_reason(self, params: Any, device: DeviceInfo) -> str | None:
        if params.precision in ("fp32", "fp16", "bf16"):
            return None
        return unsupported_reason(params.precision, device)

    def compute_precision(self, params: dict[str, Any]) -> str:
        return str(params.get("precision", "bf16"))  # a gemm multiplies in its own precision

    def bound(self, params: dict[str, Any], metric: str, spec: GpuSpec) -> Bound | None:
        """A GEMM is memory-bound when its arithmetic intensity (2MNK FLOPs over the bytes of A, B and C)
        is under the GPU's ridge point (peak FLOP/s over bandwidth) and its operands do not fit in L2:
        decode-shaped skinny products against a weight matrix are."""
        shape = params.get("shape")
        precision = str(params.get("precision", "bf16"))
        peak = spec.peak(precision)
        if metric != "tflops" or not shape or len(shape) != 3 or not peak:
            return super().bound(params, metric, spec)
        m, n, k = (int(d) for d in shape)
        elem = prec.get(precision).bits / 8 if precision in prec.PRECISIONS else 2
        out_elem = 2 if precision == "fp8" else elem  # fp8 products are written in bf16
        bytes_moved = (m * k + k * n) * elem + m * n * out_elem
        intensity = 2.0 * m * n * k / bytes_moved
        ridge = peak * 1e12 / (spec.bandwidth_tb_s * 1e12)
        # operands that fit in the L2 cache are not limited by device memory (a 1024^3 product is
        # latency-bound, not bandwidth-bound): only larger ones under the ridge scale with bandwidth
        return "memory" if intensity < ridge and bytes_moved > L2_SCALE_BYTES else "compute"

    def estimate_s(self, params: Any, rule: StopRule) -> float:
        return rule.min_seconds + 1.0

    def run(self, params: Any, ctx: CaseContext) -> None:
        import torch

        m, n, k = params.shape
        dev = ctx.device.torch_device
        torch.backends.cuda.matmul.allow_tf32 = params.precision == "tf32"
        torch.backends.cudnn.allow_tf32 = params.precision == "tf32"
        gen = torch.Generator(device=dev).manual_seed(0)
        # fp8 operands are cast from bf16 inside the timed call (_fp8_matmul), as a real fp8 layer does
        dtype = getattr(torch, "bfloat16" if params.precision == "fp8" else prec.get(params.precision).dtype)
        a = torch.randn(m, k, device=dev, dtype=dtype, generator=gen)
        b = torch.randn(k, n, device=dev, dtype=dtype, generator=gen)
        if params.precision == "fp8":
            fn, out = _fp8_matmul(a, b)
        else:
            c = torch.empty(m, n, device=dev, dtype=dtype)
            fn, out = (lambda: torch.matmul(a, b, out=c)), c
        ctx.progress(0.0, "checking the result")
        ctx.record_value("rel_error_vs_fp32", _rel_error(a, b, fn, out))
        ctx.reset_peak_memory()
        meas = ctx.measure(fn)
        flops = 2.0 * m * n * k
        ctx.record("tflops", [flops / t / 1e12 for t in meas.samples_s])
        ctx.record_monitors(meas)
        ctx.info["flops_per_iter"] = flops


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


def _rel_error(a: Any, b: Any, fn: Any, out: Any) -> float:
    """||C - ref|| / ||ref|| on the first rows, against a float32 (TF32 off) reference."""
    import torch

    fn()
    rows = min(a.shape[0], 256)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        ref = a[:rows].float() @ b.float()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    got = out[:rows].float()
    if not torch.isfinite(got).all():
        return float("inf")
    return float((got - ref).norm() / ref.norm())
