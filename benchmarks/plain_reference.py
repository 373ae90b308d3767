"""Plain torch reference figures, timed outside llmbench: an 8192^3 bf16 matmul loop and a 4 GiB
device copy. `--compare` reads a ceilings result set and prints how far llmbench's figures are."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch


def _time_loop(fn, iters: int, warmup: int = 10) -> float:
    """Seconds per iteration: events around the whole loop, one sync at the end."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def matmul_tflops(n: int = 8192) -> float:
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    return 2 * n**3 / _time_loop(lambda: torch.matmul(a, b, out=c), 100) / 1e12


def copy_tb_per_s(mib: int = 4096) -> float:
    numel = mib * 2**20 // 4
    src = torch.rand(numel, device="cuda")
    dst = torch.empty_like(src)
    return 2 * numel * 4 / _time_loop(lambda: dst.copy_(src), 50) / 1e12


def measure(repeats: int = 5) -> dict:
    mm = [matmul_tflops() for _ in range(repeats)]
    cp = [copy_tb_per_s() for _ in range(repeats)]
    return {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "matmul_bf16_8192_tflops": sorted(mm)[len(mm) // 2], "matmul_runs": mm,
            "d2d_copy_4096mib_tb_per_s": sorted(cp)[len(cp) // 2], "copy_runs": cp}


def llmbench_figures(path: Path) -> dict:
    rs = json.loads(path.read_text())
    out = {}
    for c in rs["cases"]:
        p, m = c["params"], c.get("metrics", {})
        if c["scenario"] == "gemm" and p["precision"] == "bf16" and p["shape"] == [8192, 8192, 8192]:
            out["matmul_bf16_8192_tflops"] = m["tflops"]["value"]
        if c["scenario"] == "bandwidth" and p["kind"] == "d2d" and p["size_mib"] == 4096:
            out["d2d_copy_4096mib_tb_per_s"] = m["tb_per_s"]["value"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", type=Path, help="a ceilings result set to set beside the plain figures")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("plain_reference needs a CUDA GPU", file=sys.stderr)
        return 2
    res = measure()
    if args.compare:
        ours = llmbench_figures(args.compare)
        res["llmbench"] = ours
        res["llmbench_vs_plain_pct"] = {k: 100 * (ours[k] / res[k] - 1) for k in ours}
    print(json.dumps(res, indent=1))
    if args.out:
        args.out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
