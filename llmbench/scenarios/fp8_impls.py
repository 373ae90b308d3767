"""The fp8 engines of `linear_fp8`: Transformer Engine recipes, torchao Float8Linear, raw torch._scaled_mm.

Each builder takes the bf16 baseline module (so every impl multiplies the same weights) and returns a
module whose forward (and backward) does its own casts to fp8: that cast work is part of what fp8
costs, so it is timed. Each impl is measured the way its users run it: `scaled-mm` in a forward pass
is inference, whose weights are quantized once at load (only the activation is scaled per call); in
training (fwd_bwd) the weights change every step, so every impl casts them every call
(`scaled-mm-percall-weight` keeps the per-call weight cast in a forward pass too, labelled as such).
torchao's float8 training is documented with torch.compile, so its default mode is compiled (MODES).
torch, torchao and transformer_engine are imported inside the functions.
"""

from __future__ import annotations

import importlib.util
from typing import Any

TE_INSTALL = "pip install 'llmbench[te]' (or: pip install transformer-engine[pytorch])"
TORCHAO_INSTALL = "pip install torchao"

# impl -> (TE recipe class in transformer_engine.common.recipe, minimum compute capability)
TE_RECIPES: dict[str, tuple[str, tuple[int, int]]] = {
    "te-delayed": ("DelayedScaling", (8, 9)),
    "te-current": ("Float8CurrentScaling", (8, 9)),
    "te-block": ("Float8BlockScaling", (9, 0)),
    "te-mxfp8": ("MXFP8BlockScaling", (10, 0)),
    "te-nvfp4": ("NVFP4BlockScaling", (10, 0)),
}
TORCHAO_RECIPES = {"torchao-tensorwise": "tensorwise", "torchao-rowwise": "rowwise"}
SCALED_MM = ("scaled-mm", "scaled-mm-percall-weight")
FP8_MIN_CC = (8, 9)


def weight_once(impl: str, pass_: str) -> bool:
    """Whether `impl` quantizes its weights once at load: scaled-mm's inference (forward) path."""
    return impl == "scaled-mm" and pass_ == "fwd"


def default_mode(impl: str) -> str:
    """How an impl's users run it: torchao float8 under torch.compile (its documented use); Transformer
    Engine eagerly (its modules fuse their own casts); torch._scaled_mm and bf16 eagerly."""
    return "compiled" if impl in TORCHAO_RECIPES else "eager"


def mode_reason(impl: str, mode: str) -> str | None:
    """Why `impl` cannot run in `mode` (Transformer Engine's modules are not run under torch.compile)."""
    if mode == "compiled" and impl in TE_RECIPES:
        return f"{impl} runs eagerly: Transformer Engine's modules fuse their own casts (mode = 'compiled' is not run)"
    return None


def code_path(impl: str, pass_: str, mode: str) -> dict[str, Any]:
    """What a linear_fp8 case runs: the impl's kernels, where weights are quantized, activation scaling."""
    path: dict[str, Any] = {"impl": impl, "mode": mode, "baseline": f"bf16 nn.Linear, {mode}"}
    if mode == "compiled":  # no other shape goes through the timed module (linear_fp8 says why)
        path["compiled_graph"] = "static: the timed input shape only"
    if impl == "bf16":
        return path
    if impl in TE_RECIPES:
        path["recipe"] = f"transformer_engine {TE_RECIPES[impl][0]}"
    elif impl in TORCHAO_RECIPES:
        path["recipe"] = f"torchao convert_to_float8_training, {TORCHAO_RECIPES[impl]} scaling"
    else:
        path["kernel"] = "torch._scaled_mm, e4m3 operands (e5m2 gradients), dynamic per-tensor scales"
    path["weights_quantized"] = "once at load" if weight_once(impl, pass_) else "every call"
    return path


def importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def min_cc(impl: str) -> tuple[int, int] | None:
    """Compute capability an impl needs; None for the bf16 baseline (runs anywhere)."""
    if impl in TE_RECIPES:
        return TE_RECIPES[impl][1]
    return None if impl == "bf16" else FP8_MIN_CC


def package_of(impl: str) -> tuple[str, str] | None:
    """(import name, install command) an impl needs beyond torch."""
    if impl.startswith("te-"):
        return "transformer_engine", TE_INSTALL
    if impl.startswith("torchao-"):
        return "torchao", TORCHAO_INSTALL
    return None


def te_recipe(impl: str, recipe_module: Any) -> Any:
    """The TE recipe object of `impl`, built from `recipe_module` (transformer_engine.common.recipe, or a
    stand-in in tests). DelayedScaling uses the HYBRID format (e4m3 forward, e5m2 gradients) and a
    16-step amax history, as TE's own examples do; the others keep TE's defaults."""
    cls = getattr(recipe_module, TE_RECIPES[impl][0])
    if impl == "te-delayed":
        return cls(fp8_format=recipe_module.Format.HYBRID, amax_history_len=16, amax_compute_algo="max")
    return cls()


def te_autocast(te: Any, recipe: Any) -> Any:
    """TE's quantized autocast: `te.autocast(enabled=, recipe=)` (TE >= 2.8), else the older
    `te.fp8_autocast(enabled=, fp8_recipe=)`."""
    if hasattr(te, "autocast"):
        return te.autocast(enabled=True, recipe=recipe)
    return te.fp8_autocast(enabled=True, fp8_recipe=recipe)


def baseline(kind: str, m_dims: tuple[int, int, int], device: str, dtype: Any) -> Any:
    """The torch baseline: nn.Linear(K -> N), or a Llama MLP (RMSNorm, fused gate_up, SiLU*up, down)
    with hidden = K and intermediate = N."""
    import torch

    _, n, k = m_dims
    if kind == "linear":
        return torch.nn.Linear(k, n, bias=False, device=device, dtype=dtype)

    class LlamaMLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = torch.nn.RMSNorm(k, eps=1e-5, device=device, dtype=dtype)
            self.gate_up = torch.nn.Linear(k, 2 * n, bias=False, device=device, dtype=dtype)
            self.down = torch.nn.Linear(n, k, bias=False, device=device, dtype=dtype)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            g, u = self.gate_up(self.norm(x)).chunk(2, dim=-1)
            return self.down(torch.nn.functional.silu(g) * u)

    return LlamaMLP()


def build(impl: str, base: Any, pass_: str) -> tuple[Any, Any]:
    """(module, context factory) of `impl` over the weights of `base`; the context wraps each call
    (TE's autocast), a null context elsewhere."""
    import contextlib
    import copy

    if impl == "bf16":
        return base, contextlib.nullcontext
    if impl in TE_RECIPES:
        return _te(impl, base)
    if impl in TORCHAO_RECIPES:
        import torch
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        # convert_to_float8_training swaps the nn.Linear children of a module, not the module itself
        root = torch.nn.Sequential(copy.deepcopy(base))
        convert_to_float8_training(root, config=Float8LinearConfig.from_recipe_name(TORCHAO_RECIPES[impl]))
        return root, contextlib.nullcontext
    if impl in SCALED_MM:
        return _swap_scaled_mm(copy.deepcopy(base), weight_once(impl, pass_)), contextlib.nullcontext
    raise ValueError(f"unknown impl {impl!r}")


def _te(impl: str, base: Any) -> tuple[Any, Any]:
    import functools

    import torch

    from llmbench.hardware.cudnn import import_transformer_engine

    te = import_transformer_engine()  # first: importing any part of TE loads its core library
    from transformer_engine.common import recipe as te_recipe_mod

    recipe = te_recipe(impl, te_recipe_mod)
    dev, dtype = next(base.parameters()).device, next(base.parameters()).dtype
    with torch.no_grad():
        if hasattr(base, "gate_up"):
            hidden, inter = base.gate_up.in_features, base.down.in_features
            mod = te.LayerNormMLP(hidden, inter, eps=1e-5, bias=False, normalization="RMSNorm",
                                  activation="swiglu", params_dtype=dtype, device=dev)
            mod.layer_norm_weight.copy_(base.norm.weight)
            mod.fc1_weight.copy_(base.gate_up.weight)  # swiglu: silu(first half) * second half
            mod.fc2_weight.copy_(base.down.weight)
        else:
            mod = te.Linear(base.in_features, base.out_features, bias=False, params_dtype=dtype, device=dev)
            mod.weight.copy_(base.weight)
    return mod, functools.partial(te_autocast, te, recipe)


def _swap_scaled_mm(module: Any, once: bool) -> Any:
    """Every nn.Linear of `module` (or `module` itself) replaced by a ScaledMMLinear on its weight,
    its weight quantized now (`once`, inference) or in every call (training)."""
    import torch

    if isinstance(module, torch.nn.Linear):
        return ScaledMMLinear.quantized(module) if once else ScaledMMLinear.of(module)
    for name, child in list(module.named_children()):
        setattr(module, name, _swap_scaled_mm(child, once))
    return module


def _to_fp8(t: Any, dtype: Any) -> tuple[Any, Any]:
    """Dynamic per-tensor scaling: amax, scale = amax / fp8 max, cast. Returns (fp8 tensor, scale)."""
    import torch

    fmax = torch.finfo(dtype).max
    scale = (t.abs().amax().float() / fmax).clamp(min=1e-12)
    return (t.float() / scale).to(dtype), scale


def _mm(a: Any, b: Any, a_dtype: Any, b_dtype: Any) -> Any:
    """a @ b in fp8 via torch._scaled_mm: a row-major, b column-major (cuBLAS's fp8 layout), bf16 out."""
    import torch

    a8, sa = _to_fp8(a, a_dtype)
    b8, sb = _to_fp8(b.t().contiguous(), b_dtype)
    return torch._scaled_mm(a8, b8.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)


def _scaled_mm_fn() -> Any:
    import torch

    e4m3, e5m2 = torch.float8_e4m3fn, torch.float8_e5m2

    class ScaledMMFn(torch.autograd.Function):
        """y = x @ W^T with e4m3 operands; backward: dx = dy @ W, dW = dy^T @ x with e5m2 gradients."""

        @staticmethod
        def forward(ctx: Any, x: Any, w: Any) -> Any:
            ctx.save_for_backward(x, w)
            x2 = x.reshape(-1, x.shape[-1])
            return _mm(x2, w.t(), e4m3, e4m3).reshape(*x.shape[:-1], w.shape[0])

        @staticmethod
        def backward(ctx: Any, dy: Any) -> Any:
            x, w = ctx.saved_tensors
            dy2 = dy.reshape(-1, dy.shape[-1])
            x2 = x.reshape(-1, x.shape[-1])
            dx = _mm(dy2, w, e5m2, e4m3).reshape(x.shape)
            dw = _mm(dy2.t().contiguous(), x2, e5m2, e4m3)
            return dx, dw.to(w.dtype)

    return ScaledMMFn


class ScaledMMLinear:
    """Factory of a torch module (built lazily, torch stays unimported at module import)."""

    @staticmethod
    def of(linear: Any) -> Any:
        import torch

        fn = _scaled_mm_fn()

        class _ScaledMMLinear(torch.nn.Module):
            def __init__(self, weight: Any) -> None:
                super().__init__()
                self.weight = weight

            def forward(self, x: Any) -> Any:
                return fn.apply(x, self.weight)

        return _ScaledMMLinear(linear.weight)

    @staticmethod
    def quantized(linear: Any) -> Any:
        """Inference: the weight cast to e4m3 once, here, and kept column-major as cuBLAS wants it;
        each call scales and casts only the activation."""
        import torch

        e4m3 = torch.float8_e4m3fn
        with torch.no_grad():
            w8, sw = _to_fp8(linear.weight.detach(), e4m3)  # [N, K] row-major = [K, N] column-major

        class _QuantizedScaledMMLinear(torch.nn.Module):
            w8: torch.Tensor
            scale_w: torch.Tensor

            def __init__(self) -> None:
                super().__init__()
                self.register_buffer("w8", w8)
                self.register_buffer("scale_w", sw)

            def forward(self, x: Any) -> Any:
                x2 = x.reshape(-1, x.shape[-1])
                x8, sx = _to_fp8(x2, e4m3)
                y = torch._scaled_mm(x8, self.w8.t(), scale_a=sx, scale_b=self.scale_w, out_dtype=torch.bfloat16)
                return y.reshape(*x.shape[:-1], self.w8.shape[0])

        return _QuantizedScaledMMLinear()


def gemm_shapes(mlp: bool, dims: tuple[int, int, int], pass_: str) -> list[tuple[int, int, int]]:
    """(M, N, K) of each GEMM of the pass: forward; with fwd_bwd also dgrad (M, K, N) and wgrad (N, K, M).
    The MLP block: gate_up (M, 2I, H) and down (M, H, I), each with its backward GEMMs."""
    m, n, k = dims
    linears = [(m, 2 * n, k), (m, k, n)] if mlp else [(m, n, k)]
    out = []
    for mm, nn_, kk in linears:
        out.append((mm, nn_, kk))
        if pass_ == "fwd_bwd":
            out += [(mm, kk, nn_), (nn_, kk, mm)]
    return out


def gemm_only(shapes: list[tuple[int, int, int]], fp8: bool, device: str) -> Any:
    """A call running just the pass's GEMMs on operands already in their format (fp8: e4m3 with unit
    scales through torch._scaled_mm; else bf16 torch.mm): no casts, no scaling, the ceiling of any impl."""
    import torch

    gen = torch.Generator(device=device).manual_seed(1)
    ops = []
    for m, n, k in shapes:
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16, generator=gen)
        b = torch.randn(n, k, device=device, dtype=torch.bfloat16, generator=gen)
        if fp8:
            ops.append((a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn).t()))  # b column-major
        else:
            ops.append((a, b.t()))
    one = torch.ones((), device=device, dtype=torch.float32)

    def run() -> None:
        for a, b in ops:
            if fp8:
                torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            else:
                torch.mm(a, b)
    return run
