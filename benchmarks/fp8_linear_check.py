"""Plain torch (and torchao) check of the linear_fp8 figures: the same definitions, written without
llmbench, timed with CUDA events, so a llmbench figure can be held against an independent one.

For Llama-3-8B gate_up (N=28672, K=4096) and down (N=4096, K=14336) at M tokens (default 16384):
- bf16: F.linear, eager and torch.compile'd (the baseline each fp8 variant is divided by, same mode);
- fp8 inference: the weight quantized to e4m3 ONCE (per-tensor scale), each call scales the activation
  per tensor and runs torch._scaled_mm, eager and compiled; and the same with the weight cast in each
  call (what llmbench's old scaled-mm forward did);
- torchao float8 training (convert_to_float8_training, tensorwise and rowwise) forward and
  forward+backward, compiled (as torchao documents) and eager;
- the GEMMs alone: torch._scaled_mm on operands already in e4m3 against torch.mm in bf16.

Run on a GPU: python benchmarks/fp8_linear_check.py [--tokens 16384] [--json OUT.json]
Each figure: the median of --iters timed calls (one CUDA event pair each) after --warmup calls.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
SHAPES = {"gate_up": (28672, 4096), "down": (4096, 14336)}  # (N, K) of Llama-3-8B


def median_ms(fn: Callable[[], Any], warmup: int, iters: int) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def to_fp8(t: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    scale = (t.abs().amax().float() / torch.finfo(dtype).max).clamp(min=1e-12)
    return (t.float() / scale).to(dtype), scale


def fp8_linear_weight_once(w8: torch.Tensor, sw: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    def f(x: torch.Tensor) -> torch.Tensor:
        x8, sx = to_fp8(x, E4M3)
        return torch._scaled_mm(x8, w8.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16)
    return f


def fp8_linear_weight_every_call(w: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    def f(x: torch.Tensor) -> torch.Tensor:
        x8, sx = to_fp8(x, E4M3)
        w8, sw = to_fp8(w, E4M3)
        return torch._scaled_mm(x8, w8.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16)
    return f


def check(proj: str, m: int, warmup: int, iters: int) -> dict[str, float]:
    # every variant compiles its own graphs; without a reset the second shape's compiled variants hit
    # dynamo's recompile limit and silently run eagerly
    torch._dynamo.reset()
    n, k = SHAPES[proj]
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    lin = torch.nn.Linear(k, n, bias=False, device="cuda", dtype=torch.bfloat16)
    w = lin.weight.detach()
    dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, generator=gen)
    out: dict[str, float] = {}

    def t(name: str, fn: Callable[[], Any]) -> None:
        out[name] = median_ms(fn, warmup, iters)

    with torch.no_grad():
        bf16 = lambda x_: F.linear(x_, w)  # noqa: E731
        bf16_c = torch.compile(lambda x_: F.linear(x_, w))
        t("fwd bf16 eager", lambda: bf16(x))
        t("fwd bf16 compiled", lambda: bf16_c(x))
        w8, sw = to_fp8(w, E4M3)
        once = fp8_linear_weight_once(w8, sw)
        t("fwd fp8 weight-once eager", lambda: once(x))
        once_c = torch.compile(fp8_linear_weight_once(w8, sw))
        t("fwd fp8 weight-once compiled", lambda: once_c(x))
        every = fp8_linear_weight_every_call(w)
        t("fwd fp8 weight-every-call eager", lambda: every(x))
        a8, b8 = x.to(E4M3), w.to(E4M3)
        one = torch.ones((), device="cuda")
        t("gemm fwd bf16", lambda: torch.mm(x, w.t()))
        t("gemm fwd fp8", lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))

    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    def train_step(mod: Any, compiled: bool) -> Callable[[], None]:
        xg = x.detach().requires_grad_(True)
        weight = mod[0].weight
        run = torch.compile(mod) if compiled else mod

        def step() -> None:
            xg.grad = None
            weight.grad = None
            run(xg).backward(dy)
        return step

    base = torch.nn.Sequential(copy.deepcopy(lin))
    t("fwd_bwd bf16 eager", train_step(base, False))
    t("fwd_bwd bf16 compiled", train_step(copy.deepcopy(base), True))
    with torch.no_grad():
        base_c = torch.compile(copy.deepcopy(base))
        t("fwd bf16 module compiled", lambda: base_c(x))
    for recipe in ("tensorwise", "rowwise"):
        mod = torch.nn.Sequential(copy.deepcopy(lin))
        convert_to_float8_training(mod, config=Float8LinearConfig.from_recipe_name(recipe))
        t(f"fwd_bwd torchao-{recipe} eager", train_step(mod, False))
        t(f"fwd_bwd torchao-{recipe} compiled", train_step(copy.deepcopy(mod), True))
        with torch.no_grad():
            mod_c = torch.compile(copy.deepcopy(mod))
            t(f"fwd torchao-{recipe} compiled", lambda mod_c=mod_c: mod_c(x))
            t(f"fwd torchao-{recipe} eager", lambda mod=mod: mod(x))
    return out


def speedups(ms: dict[str, float]) -> dict[str, float]:
    """Each fp8 variant against bf16 of the same pass and mode."""
    base = {("fwd", "eager"): ms["fwd bf16 eager"], ("fwd", "compiled"): ms["fwd bf16 compiled"],
            ("fwd_bwd", "eager"): ms["fwd_bwd bf16 eager"], ("fwd_bwd", "compiled"): ms["fwd_bwd bf16 compiled"]}
    out = {}
    for name, v in ms.items():
        parts = name.split()
        if name.startswith("gemm") or "bf16" in parts:
            continue
        out[name] = base[(parts[0], parts[-1])] / v
    out["gemm fwd fp8"] = ms["gemm fwd bf16"] / ms["gemm fwd fp8"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch._dynamo.config.recompile_limit = 64  # grad and no-grad calls of one function are two graphs
    result: dict[str, Any] = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "tokens": a.tokens}
    for proj in SHAPES:
        ms = check(proj, a.tokens, a.warmup, a.iters)
        result[proj] = {"ms": ms, "speedup_vs_bf16_same_mode": speedups(ms)}
        print(f"\n== {proj} (M={a.tokens}, N, K = {SHAPES[proj]})")
        for name, v in ms.items():
            sp = result[proj]["speedup_vs_bf16_same_mode"].get(name)
            print(f"  {name:36s} {v:8.3f} ms" + (f"   {sp:5.2f}x of bf16" if sp else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
