"""Roofline of one linear layer (or a Llama MLP block) in bf16 and in fp8: predicted time and speedup.

fp8 halves a GEMM's compute time on Hopper but adds memory-bound work around it: every operand is read
in bf16 and written in fp8 (plus a transposed copy for the backward pass), and dynamic scaling reads
each tensor once more for its amax. At small token counts those casts and the extra kernel launches
cost more than the GEMM saves; this module says where that happens, per kernel:
time = sum over kernels of max(flops / peak, bytes / bandwidth) + kernels * launch cost.
Pure arithmetic (no torch). Prior art: torchao's benchmarks/float8/float8_roofline.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from llmbench.errors import choices_hint

Pass = Literal["fwd", "fwd_bwd"]
BF16, FP8, FP32 = 2, 1, 4  # bytes per element

# Projections of a transformer block, as (N, K) of y[M, N] = x[M, K] @ W[N, K]^T.
PROJECTIONS = ("q", "k", "v", "o", "qkv", "gate", "up", "gate_up", "down")


def projection_nk(
    proj: str, *, hidden: int, heads: int, kv_heads: int, head_dim: int, intermediate: int
) -> tuple[int, int]:
    """(N, K) of projection `proj` of a Llama-style block (fused qkv and gate_up as inference engines run them)."""
    q, kv = heads * head_dim, kv_heads * head_dim
    table = {
        "q": (q, hidden),
        "k": (kv, hidden),
        "v": (kv, hidden),
        "o": (hidden, q),
        "qkv": (q + 2 * kv, hidden),
        "gate": (intermediate, hidden),
        "up": (intermediate, hidden),
        "gate_up": (2 * intermediate, hidden),
        "down": (hidden, intermediate),
    }
    if proj not in table:
        raise ValueError(f"unknown projection {proj!r}; {choices_hint(proj, PROJECTIONS)}")
    return table[proj]


@dataclass(frozen=True)
class Scheme:
    """How an impl computes: in fp8 or not, whether it reads each bf16 tensor once more for its amax
    (dynamic per-tensor scaling as a separate reduction; delayed scaling takes last step's amax and
    row/block scaling finds it inside the cast kernel), and which peak its GEMMs run at."""

    fp8: bool
    amax_pass: bool
    peak_key: str = "bf16"


SCHEMES: dict[str, Scheme] = {
    "bf16": Scheme(False, False, "bf16"),
    "te-delayed": Scheme(True, False, "fp8"),
    "te-current": Scheme(True, True, "fp8"),
    "te-block": Scheme(True, False, "fp8"),
    "te-mxfp8": Scheme(True, False, "fp8"),
    "te-nvfp4": Scheme(True, False, "fp4"),
    "torchao-tensorwise": Scheme(True, True, "fp8"),
    "torchao-rowwise": Scheme(True, False, "fp8"),
    "scaled-mm": Scheme(True, True, "fp8"),
    "scaled-mm-percall-weight": Scheme(True, True, "fp8"),
}


@dataclass(frozen=True)
class Kernel:
    name: str
    flops: float
    bytes: float
    peak_key: str  # "bf16"/"fp8" tensor cores, or "memory" for elementwise/reduction work


@dataclass(frozen=True)
class Roof:
    """The roof a prediction stands under: peaks in TFLOP/s per key, bandwidth, per-kernel launch cost."""

    peak_tflops: dict[str, float]
    bandwidth_tb_s: float
    launch_s: float = 0.0


def _cast(name: str, elems: float, scheme: Scheme, transposed_copy: bool) -> list[Kernel]:
    """bf16 -> fp8 cast of `elems` elements: read bf16, write fp8 (twice with a transposed copy for the
    backward GEMMs), and for dynamic scaling a separate amax read first."""
    out = []
    if scheme.amax_pass:
        out.append(Kernel(f"amax {name}", 0.0, elems * BF16, "memory"))
    writes = 2 if transposed_copy else 1
    out.append(Kernel(f"cast {name}", 0.0, elems * (BF16 + writes * FP8), "memory"))
    return out


def _gemm(name: str, m: int, n: int, k: int, scheme: Scheme) -> Kernel:
    ob = FP8 if scheme.fp8 else BF16
    return Kernel(name, 2.0 * m * n * k, (m * k + n * k) * ob + m * n * BF16, scheme.peak_key)


def linear_kernels(m: int, n: int, k: int, impl: str, pass_: Pass, weight_once: bool = False) -> list[Kernel]:
    """The kernels of one y = x @ W^T (x: M x K, W: N x K), forward or forward + backward (dgrad and
    wgrad GEMMs; fp8 casts the output gradient too). `weight_once`: the weight was quantized at load
    (inference), so no call casts it."""
    s = SCHEMES[impl]
    bwd = pass_ == "fwd_bwd"
    ks: list[Kernel] = []
    if s.fp8:
        ks += _cast("x", m * k, s, bwd) + ([] if weight_once else _cast("w", n * k, s, bwd))
    ks.append(_gemm("fwd gemm", m, n, k, s))
    if bwd:
        if s.fp8:
            ks += _cast("dy", m * n, s, True)
        ks.append(_gemm("dgrad gemm", m, k, n, s))  # dx[M,K] = dy[M,N] @ W[N,K]
        ks.append(_gemm("wgrad gemm", n, k, m, s))  # dW[N,K] = dy^T[N,M] @ x[M,K]
    return ks


def mlp_kernels(
    m: int, hidden: int, intermediate: int, impl: str, pass_: Pass, weight_once: bool = False
) -> list[Kernel]:
    """A Llama MLP block: fused gate_up, SiLU(gate) * up, down (norm left out: the same in every impl)."""
    ks = [Kernel(f"gate_up: {x.name}", x.flops, x.bytes, x.peak_key)
          for x in linear_kernels(m, 2 * intermediate, hidden, impl, pass_, weight_once)]
    act_bytes = m * intermediate * (2 * BF16 + BF16)  # read gate and up, write the product
    ks.append(Kernel("silu*mul", 4.0 * m * intermediate, act_bytes, "memory"))
    if pass_ == "fwd_bwd":
        ks.append(Kernel("silu*mul bwd", 8.0 * m * intermediate, m * intermediate * 5 * BF16, "memory"))
    ks += [Kernel(f"down: {x.name}", x.flops, x.bytes, x.peak_key)
           for x in linear_kernels(m, hidden, intermediate, impl, pass_, weight_once)]
    return ks


def kernel_time_s(kernel: Kernel, roof: Roof) -> float:
    mem = kernel.bytes / (roof.bandwidth_tb_s * 1e12)
    if kernel.peak_key == "memory" or not kernel.flops:
        return mem
    peak = roof.peak_tflops.get(kernel.peak_key) or roof.peak_tflops["fp8"]
    return max(kernel.flops / (peak * 1e12), mem)


def predict_s(kernels: list[Kernel], roof: Roof) -> float:
    """Roofline time of a sequence of kernels: each at its own binding ceiling, plus a launch each."""
    return sum(kernel_time_s(k, roof) for k in kernels) + len(kernels) * roof.launch_s


def gemm_flops(kernels: list[Kernel]) -> float:
    """The FLOPs that TFLOP/s figures count: the GEMMs' 2*M*N*K (elementwise work left out)."""
    return sum(k.flops for k in kernels if k.peak_key != "memory")


def predicted_speedup(kernels_bf16: list[Kernel], kernels_impl: list[Kernel], roof: Roof) -> float:
    return predict_s(kernels_bf16, roof) / predict_s(kernels_impl, roof)
