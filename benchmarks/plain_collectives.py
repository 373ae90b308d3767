"""Plain torch all-reduce bus bandwidth, timed outside llmbench, to check the `collectives` suite's
figures on the same machine. Run under torchrun, one process per GPU:

    torchrun --standalone --nproc_per_node=2 benchmarks/plain_collectives.py [--out FILE]
    torchrun --standalone --nproc_per_node=2 benchmarks/plain_collectives.py --device cpu   # gloo smoke test

For each size S (MiB, doubling from --min-mib to --max-mib) each rank runs --warmup calls, then times
--iters back-to-back in-place all-reduces with one pair of CUDA events (the host clock under gloo) and
divides, as nccl-tests does; the time reported is the slowest rank's (nccl-tests' `-a 3`). algbw = S /
time, busbw = algbw x 2(n-1)/n (nccl-tests, doc/PERFORMANCE.md). NCCL_ALGO is left alone; NVLink
multicast stays off unless the environment says otherwise (NCCL_NVLS_ENABLE=0 by default). Rank 0
prints a table and, with --out, writes the rows as JSON. No llmbench import."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
for key, value in MULTICAST_OFF.items():  # unless the environment says otherwise, before torch starts NCCL
    os.environ.setdefault(key, value)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def window_s(x: torch.Tensor, iters: int, cuda: bool) -> float:
    """Seconds per all-reduce over `iters` back-to-back calls."""
    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            dist.all_reduce(x)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / iters
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    return (time.perf_counter() - t0) / iters


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--min-mib", type=float, default=1.0)
    ap.add_argument("--max-mib", type=float, default=1024.0)
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    cuda = args.device == "cuda"
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(local)
    dev = torch.device(f"cuda:{local}" if cuda else "cpu")
    dist.init_process_group("nccl" if cuda else "gloo", device_id=dev if cuda else None)
    rank, n = dist.get_rank(), dist.get_world_size()
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    rows = []
    mib = args.min_mib
    while mib <= args.max_mib:
        size = int(mib * 2**20) // dtype.itemsize * dtype.itemsize
        x = torch.zeros(size // dtype.itemsize, dtype=dtype, device=dev)
        for _ in range(args.warmup):
            dist.all_reduce(x)
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        t = torch.tensor([window_s(x, args.iters, cuda)], dtype=torch.float64, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        sec = float(t.item())
        algbw = size / sec / 1e9
        rows.append({"size_mib": mib, "bytes": size, "time_us": sec * 1e6, "algbw_gbps": algbw,
                     "busbw_gbps": algbw * 2 * (n - 1) / n})
        del x
        mib *= 2
    if rank == 0:
        print(f"all_reduce, {n} ranks, {args.dtype}, {dist.get_backend()}, torch {torch.__version__}"
              + (f", NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}" if cuda else ""))
        print(f"{'size_mib':>10} {'time_us':>12} {'algbw_gbps':>11} {'busbw_gbps':>11}")
        for r in rows:
            print(f"{r['size_mib']:>10g} {r['time_us']:>12.1f} {r['algbw_gbps']:>11.2f} {r['busbw_gbps']:>11.2f}")
        if args.out:
            env = {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "NCCL_ALGO", "NCCL_PROTO")}
            args.out.write_text(json.dumps({"op": "all_reduce", "ranks": n, "dtype": args.dtype, "env": env,
                                            "torch": torch.__version__, "rows": rows}, indent=1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
