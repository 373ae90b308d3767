"""Where a compiled batch-1 decode step spends its time, and what moves it toward the bandwidth
roofline: the same model and StaticGreedy loop the generate scenario's compiled mode runs, in
variants (unfused / fused q-k-v and gate-up projections / + inductor coordinate-descent tuning,
which is what mode=compiled runs / + max-autotune), each timed (median TPOT over whole 128-token
generations, CUDA events) and profiled (kernel time per decode step by difference of two runs, top
kernels by time).

    python benchmarks/decode_profile.py --model llama-3-8b --out decode-profile.json
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from report_out import emit

from llmbench.engines.fuse import fuse_projections
from llmbench.engines.hf import GPU_COMPILE_OPTIONS, HFSession, StaticGreedy
from llmbench.hardware import roofline
from llmbench.hardware.specs import match_name
from llmbench.harness.worker import device_info
from llmbench.measure.kernel_profile import decode_step_profile
from llmbench.models.build import build_model, synthetic_ids
from llmbench.scenarios.bandwidth import measured_copy_tb_s
from llmbench.scenarios.generate import TokenClock, token_metrics

# name -> (fused projections, torch.compile options); "fused-cdt" is what mode=compiled runs
VARIANTS: dict[str, tuple[bool, dict[str, Any]]] = {
    "base": (False, {"triton.cudagraphs": True}),
    "fused": (True, {"triton.cudagraphs": True}),
    "fused-cdt": (True, GPU_COMPILE_OPTIONS),
    "fused-autotune": (True, {"triton.cudagraphs": True, "coordinate_descent_tuning": True, "max_autotune": True}),
}


def category(kernel: str) -> str:
    k = kernel.lower()
    if any(s in k for s in ("gemv", "gemm", "nvjet", "cutlass", "sm90", "splitk", "_mm", "matmul")):
        return "matmul"
    if any(s in k for s in ("flash", "fmha", "attention", "sdpa")):
        return "attention"
    if k.startswith("triton"):
        return "triton (fused elementwise/reductions)"
    if "memcpy" in k or "memset" in k or "copy" in k:
        return "copies"
    return "other"


def run_variant(
    name: str, session: HFSession, ids: torch.Tensor, out_len: int, iters: int, bound_s: float
) -> dict[str, Any]:
    fused, options = VARIANTS[name]
    torch._dynamo.reset()  # drops the previous variant's compiled code and CUDA graphs
    gc.collect()
    torch.cuda.empty_cache()
    static = StaticGreedy(session.model, out_len, compile_options=options)
    t0 = time.perf_counter()
    static.run(ids, out_len)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    clock = TokenClock(cuda=True)
    for _ in range(iters):
        clock.begin()
        static.run(ids, out_len, on_token=clock.stamp)
        clock.end()
    runs = clock.seconds(iters)
    tm = [token_metrics(r[0], r[1:-1], r[-1], batch=ids.shape[0], input_len=ids.shape[1]) for r in runs]
    tpot = statistics.median(t.tpot_ms for t in tm) / 1e3
    prof = decode_step_profile(lambda n: static.run(ids, n), 8, 40)
    cats: dict[str, float] = {}
    for k, t in prof.by_name_s.items():
        cats[category(k)] = cats.get(category(k), 0.0) + t * 1e3
    tokens = static.last_tokens.clone()
    return {
        "fused": fused,
        "compile_options": options,
        "compile_s": round(compile_s, 1),
        "tpot_ms": [round(t.tpot_ms, 4) for t in tm],
        "tpot_ms_median": round(tpot * 1e3, 4),
        "decode_tokens_per_s": round(ids.shape[0] / tpot, 2),
        "roofline_efficiency": round(bound_s / tpot, 4),
        "gpu_busy_ms_per_step": round(prof.busy_s * 1e3, 4),
        "gpu_idle_ms_per_step": round((tpot - prof.busy_s) * 1e3, 4),
        "kernels_per_step": prof.kernels,
        "ms_per_step_by_category": {k: round(v, 4) for k, v in sorted(cats.items(), key=lambda kv: -kv[1])},
        "top_kernels_ms_per_step": {k[:120]: round(t * 1e3, 4) for k, t in prof.top(12)},
        "_tokens": tokens,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, from {', '.join(VARIANTS)}")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--ceilings", type=Path, default=Path("results"),
                    help="a ceilings result set, or a results folder holding <gpu-slug>/ceilings-*.json, for the "
                    "measured copy bandwidth (default: ./results; none there: the datasheet)")
    args = ap.parse_args()
    names = args.variants.split(",")
    bad = [n for n in names if n not in VARIANTS]
    if bad:
        ap.error(f"unknown variant(s) {', '.join(bad)}; valid: {', '.join(VARIANTS)}")
    if any(VARIANTS[n][0] for n in names) and not all(
        VARIANTS[a][0] <= VARIANTS[b][0] for a, b in itertools.pairwise(names)
    ):
        ap.error("list unfused variants before fused ones (fusion is applied in place, once)")
    dev = device_info("auto")
    if not dev.is_cuda:
        ap.error("needs a CUDA GPU")
    session = HFSession(build_model(model=args.model, pretrained=None, weights="random", device="cuda", seed=0))
    spec = match_name(dev.name, dev.memory_gib)
    if spec is None:
        ap.error(f"no spec for {dev.name}")
    ceiling = roofline.ceiling_for(spec, "bf16", measured_copy_tb_s(spec.slug, args.ceilings))
    bound = roofline.generation_bound(
        session.shape(),
        ceiling,
        batch=args.batch,
        input_len=args.input_len,
        output_len=args.output_len,
        weight_bits=16,
        elem_bytes=2,
    )
    ids = synthetic_ids(session.vocab_size, args.batch, args.input_len, "cuda", 0)
    res: dict[str, Any] = {
        "device": dev.name,
        "torch": torch.__version__,
        "llmbench_commit": os.environ.get("LLMBENCH_GIT_COMMIT"),
        "model": args.model,
        "shape": {"batch": args.batch, "input_len": args.input_len, "output_len": args.output_len},
        "decode_step_bound_ms": round(bound.decode_step_s * 1e3, 4),
        "bandwidth_tb_s": ceiling.bandwidth_tb_s,
        "variants": {},
    }
    ref_tokens = None
    fused_groups = 0
    for n in names:
        if VARIANTS[n][0] and not fused_groups:
            fused_groups = fuse_projections(session.model)
            res["fused_groups"] = fused_groups
        try:
            r = run_variant(n, session, ids, args.output_len, args.iters, bound.decode_step_s)
            tokens = r.pop("_tokens")
            if ref_tokens is None:
                ref_tokens = tokens
            r["tokens_match_first_variant"] = bool(torch.equal(tokens, ref_tokens))
        except Exception as e:  # a report: keep going with the next variant
            r = {"failed": f"{type(e).__name__}: {e}"[:500]}
        res["variants"][n] = r
        print(n, json.dumps(r, indent=1), flush=True)
    emit(res, args.out, echo=False)
    print(f"\nbound {res['decode_step_bound_ms']} ms/step at {ceiling.bandwidth_tb_s:.2f} TB/s")
    print(f"{'variant':16} {'tok/s':>8} {'TPOT ms':>8} {'roofline':>8} {'busy ms':>8} {'kernels':>8} {'compile s':>9}")
    for n, r in res["variants"].items():
        if "failed" in r:
            print(f"{n:16} failed: {r['failed'][:100]}")
            continue
        print(
            f"{n:16} {r['decode_tokens_per_s']:8.1f} {r['tpot_ms_median']:8.3f} {r['roofline_efficiency']:8.1%} "
            f"{r['gpu_busy_ms_per_step']:8.3f} {r['kernels_per_step']:8.1f} {r['compile_s']:9.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
