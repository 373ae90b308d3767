"""What llmbench's timing path adds per iteration: an empty iteration and a ~1 ms kernel, timed by
`CaseContext.measure` (per-iteration samples) and by a bare loop (one timer around all iterations)."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from report_out import emit

from llmbench.harness.worker import device_info
from llmbench.measure.timing import StopRule
from llmbench.scenarios.base import CaseContext


def bare_loop_s(fn, iters: int, cuda: bool) -> float:
    for _ in range(20):
        fn()
    if cuda:
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) / 1e3 / iters
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) / iters


def one_ms_kernel(cuda: bool):
    """A matmul sized to take about 1 ms on this device (calibrated)."""
    dev = "cuda" if cuda else "cpu"
    dtype = torch.bfloat16 if cuda else torch.float32
    n = 512
    while True:
        a = torch.randn(n, n, device=dev, dtype=dtype)
        t = bare_loop_s(lambda a=a: a @ a, 20, cuda)
        if t >= 1e-3 or n >= 16384:
            return (lambda a=a: a @ a), n
        n = int(n * max(1.1, min(2.0, (1e-3 / t) ** (1 / 3))))
        n -= n % 64


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--cpu", action="store_true")
    args = ap.parse_args()
    dev = device_info("cpu" if args.cpu else "auto")
    ctx = CaseContext(dev, StopRule(warmup_iters=20, min_iters=200, min_seconds=2.0), emit_progress=False)
    kernel, n = one_ms_kernel(dev.is_cuda)
    rows = {}
    for name, fn in (("empty", lambda: None), (f"matmul_{n}", kernel)):
        m = ctx.measure(fn)
        harness_med = statistics.median(m.samples_s)
        bare = bare_loop_s(fn, max(200, m.iters), dev.is_cuda)
        rows[name] = {"harness_median_us": harness_med * 1e6, "bare_loop_mean_us": bare * 1e6,
                      "added_per_iter_us": (harness_med - bare) * 1e6,
                      "added_pct": 100 * (harness_med / bare - 1) if bare > 0 else None,
                      "iters": m.iters, "timer": m.timer}
    res = {"device": dev.name, "torch": torch.__version__, "cases": rows}
    emit(res, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
