"""Why compiled torchao int8 weight-only decode collapses at batch > 1 on a GPU, and what to compile
it with instead. ONE linear of Llama-3-8B's fused gate/up shape (4096 -> 28672), converted by the
same apply_precision("int8") the generate scenario uses, compiled with CUDA graphs as the compiled
mode compiles a decode step, at M = 1, 8 and 32 rows, in variants:

  bf16                the reference
  int8                the compiled mode's options up to commit 77d4bac: at M > 1 inductor's post-grad
                      pattern rewrites linear(x, w.to(bf16)) * scale into aten._weight_int8pack_mm,
                      whose CUDA kernel is a plain fp32 one
  int8-nopm           pattern_matcher off: no rewrite; the int8 -> bf16 conversion goes to a Triton
                      kernel and the product to cuBLAS
  int8-nopm-autotune  + max_autotune: Triton mm templates too, which may fuse the conversion into
                      their loads

Each: median microseconds per call (llmbench's CUDA-event timer: 15 samples of 20 calls), the
weight bytes read per call over that time, and the two kernels that took most of the time
(torch.profiler).

    python benchmarks/int8_woq_batch.py --out int8-woq-batch.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from report_out import emit
from torch import nn

from llmbench.engines.hf_quant import apply_precision
from llmbench.harness.worker import device_info
from llmbench.measure.kernel_profile import kernel_tally
from llmbench.measure.timing import CudaEventTimer

IN_F, OUT_F = 4096, 28672
ROWS = (1, 8, 32)
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {  # name -> (precision, torch.compile options)
    "bf16": ("bf16", {"triton.cudagraphs": True}),
    "int8": ("int8", {"triton.cudagraphs": True}),
    "int8-nopm": ("int8", {"triton.cudagraphs": True, "pattern_matcher": False}),
    "int8-nopm-autotune": ("int8", {"triton.cudagraphs": True, "pattern_matcher": False, "max_autotune": True}),
}


def layer(precision: str) -> nn.Module:
    torch.manual_seed(0)
    lin = nn.Sequential(nn.Linear(IN_F, OUT_F, bias=False)).to("cuda", torch.bfloat16)
    nn.init.normal_(lin[0].weight, std=0.02)
    return lin if precision == "bf16" else apply_precision(lin, precision)


def time_us(call: Callable[[], None], calls: int = 20, repeats: int = 15) -> float:
    """Median microseconds per call: llmbench's CUDA-event timer, `repeats` samples of `calls` each."""
    return statistics.median(CudaEventTimer().time(call, n=repeats, inner=calls)) * 1e6


def run(name: str, rows: int) -> dict[str, Any]:
    precision, options = VARIANTS[name]
    torch._dynamo.reset()
    mod = layer(precision)
    fn = torch.compile(mod, options=options)
    x = torch.randn(rows, IN_F, device="cuda", dtype=torch.bfloat16)

    def call() -> None:  # each call a new CUDA graph step, as in a decode loop
        torch.compiler.cudagraph_mark_step_begin()
        fn(x)

    t0 = time.perf_counter()
    with torch.no_grad():
        for _ in range(3):  # compile, record the graph, replay
            call()
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        us = time_us(call)
        tally = kernel_tally(lambda: [call() for _ in range(10)])
    weight_bytes = IN_F * OUT_F * (1 if precision == "int8" else 2)
    top = sorted(tally.by_name_s.items(), key=lambda kv: -kv[1])[:2]
    return {
        "us_per_call": round(us, 2),
        "weight_gb_s": round(weight_bytes / (us * 1e-6) / 1e9, 1),
        "compile_s": round(compile_s, 1),
        "top_kernels_us_per_call": {k[:110]: round(v / 10 * 1e6, 2) for k, v in top},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--rows", nargs="*", type=int, default=list(ROWS), help="M: rows per call")
    args = ap.parse_args()
    dev = device_info("auto")
    if not dev.is_cuda:
        print("needs a CUDA GPU: the rewrite and the kernels it picks are GPU-only", file=sys.stderr)
        return 2
    res: dict[str, Any] = {"device": dev.name, "torch": torch.__version__, "shape": [IN_F, OUT_F], "rows": {}}
    for rows in args.rows:
        for name in args.variants:
            try:
                r = run(name, rows)
            except Exception as e:  # a report, not a test: keep going and say what failed
                r = {"failed": f"{type(e).__name__}: {e}"[:300]}
            res["rows"].setdefault(str(rows), {})[name] = r
            print(f"M={rows:<3} {name:<20} {json.dumps(r)}", flush=True)
            emit(res, args.out, echo=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
