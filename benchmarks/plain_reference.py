"""Plain torch reference figures, timed outside llmbench: an 8192^3 bf16 matmul loop and a 4 GiB
device-to-device copy, each timed by one pair of CUDA events around a loop of back-to-back calls.

Two windows: `burst` (100 calls, a fraction of a second: boost clocks) and `sustained` (the same
window llmbench's ceilings suite uses: 5 warm-up calls, then at least --seconds). A GPU at its power
limit clocks down within a second, so only equal windows compare; `--compare` sets llmbench's
figure from a ceilings result set (its mean time per call, as a plain loop measures) beside them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from report_out import emit


def loop_s(fn: Callable[[], object], *, calls: int = 0, seconds: float = 0.0, warmup: int = 5) -> tuple[float, int]:
    """Seconds per call over back-to-back calls: `calls` of them, or as many as fill `seconds`."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n = 0
    start.record()
    t0 = time.perf_counter()
    while n < calls or (seconds and time.perf_counter() - t0 < seconds):
        fn()
        n += 1
        if seconds and n % 16 == 0:
            torch.cuda.synchronize()  # keep the host clock honest; the events still time the GPU
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / n, n


def workloads() -> dict[str, tuple[Callable[[], object], float]]:
    """name -> (call, work units per call for the figure: TFLOP or TB moved)."""
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    numel = 4096 * 2**20 // 4
    src = torch.rand(numel, device="cuda")
    dst = torch.empty_like(src)
    return {
        "matmul_bf16_8192_tflops": (lambda: torch.matmul(a, b, out=c), 2 * n**3 / 1e12),
        "d2d_copy_4096mib_tb_per_s": (lambda: dst.copy_(src), 2 * numel * 4 / 1e12),
    }


def measure(seconds: float) -> dict[str, dict[str, float]]:
    out = {}
    for name, (fn, work) in workloads().items():
        burst, _ = loop_s(fn, calls=100)
        sustained, n = loop_s(fn, seconds=seconds)
        out[name] = {"burst": work / burst, "sustained": work / sustained, "sustained_calls": n}
    return out


def llmbench_figures(path: Path) -> dict[str, float]:
    """llmbench's figure as a plain loop would see it: work / mean time per call, from the samples."""
    rs = json.loads(path.read_text())
    out = {}
    for c in rs["cases"]:
        p, m = c["params"], c.get("metrics", {})
        key = None
        if c["scenario"] == "gemm" and p["precision"] == "bf16" and p["shape"] == [8192, 8192, 8192]:
            key, metric = "matmul_bf16_8192_tflops", "tflops"
        if c["scenario"] == "bandwidth" and p["kind"] == "d2d" and p["size_mib"] == 4096:
            key, metric = "d2d_copy_4096mib_tb_per_s", "tb_per_s"
        if key and c["status"] == "ok":
            rates = m[metric]["samples"]
            out[key] = len(rates) / sum(1.0 / r for r in rates)  # harmonic mean = work / mean time
            out[key + "_median"] = m[metric]["value"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=2.0, help="sustained window (the ceilings suite's min_seconds)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", type=Path, nargs="*", help="plain_reference JSON files (before/after) and a "
                    "ceilings result set, to set side by side; no measuring")
    args = ap.parse_args()
    if args.compare:
        plains = [json.loads(p.read_text()) for p in args.compare if "plain" in p.name]
        ours = llmbench_figures(next(p for p in args.compare if "plain" not in p.name))
        report = {}
        for key in ("matmul_bf16_8192_tflops", "d2d_copy_4096mib_tb_per_s"):
            plain = sum(p[key]["sustained"] for p in plains) / len(plains)
            report[key] = {"plain_sustained_runs": [p[key]["sustained"] for p in plains],
                           "plain_burst_runs": [p[key]["burst"] for p in plains],
                           "llmbench": ours[key], "llmbench_median": ours[key + "_median"],
                           "llmbench_vs_plain_sustained_pct": 100 * (ours[key] / plain - 1)}
        emit(report, args.out)
        return 0
    if not torch.cuda.is_available():
        print("plain_reference needs a CUDA GPU", file=sys.stderr)
        return 2
    res = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, **measure(args.seconds)}
    emit(res, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
