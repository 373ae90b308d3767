"""Plain torch check of the `ddp` scenario's scaling efficiency: the same model, per-GPU batch and
precision trained bare on one GPU (no wrapper) and under DistributedDataParallel over every rank, timed
outside llmbench. Run under torchrun, one process per GPU:

    torchrun --standalone --nproc_per_node=2 benchmarks/plain_ddp.py [--layers 4 --batch 2 --seq 2048]
    torchrun --standalone --nproc_per_node=2 benchmarks/plain_ddp.py --device cpu --model tiny-llama \
        --layers 1 --batch 2 --seq 16 --steps 3                       # gloo smoke test

Rank 0 first trains the bare model alone (the other ranks wait at a barrier), then every rank trains
the DDP-wrapped copy; each phase runs --warmup steps, then --steps timed by one pair of CUDA events
around them all (the host clock on a CPU). samples/s = batch x ranks / (time per step); efficiency =
DDP samples/s / (ranks x bare samples/s). Token ids are random (speed does not depend on them). The
model's config comes from llmbench's presets (llmbench.models.build.make_config), so the shape is the
ddp case's; nothing else of llmbench is used. Rank 0 prints the figures and, with --out, writes JSON."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
for key, value in MULTICAST_OFF.items():  # unless the environment says otherwise, before torch starts NCCL
    os.environ.setdefault(key, value)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from llmbench.models.build import make_config  # noqa: E402


def step_s(model: Any, ids: torch.Tensor, warmup: int, steps: int, cuda: bool) -> float:
    """Seconds per optimizer step (forward, backward, AdamW) over `steps` back-to-back steps."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def one() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warmup):
        one()
    if cuda:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            one()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / steps
    t0 = time.perf_counter()
    for _ in range(steps):
        one()
    return (time.perf_counter() - t0) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=2, help="per GPU")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    cuda = args.device == "cuda"
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(local)
    dev = torch.device(f"cuda:{local}" if cuda else "cpu")
    dist.init_process_group("nccl" if cuda else "gloo", device_id=dev if cuda else None)
    rank, n = dist.get_rank(), dist.get_world_size()
    cfg = make_config(args.model)
    cfg.num_hidden_layers = args.layers
    dtype = torch.bfloat16 if cuda else torch.float32
    gen = torch.Generator().manual_seed(rank)
    ids = torch.randint(0, int(cfg.vocab_size), (args.batch, args.seq), generator=gen).to(dev)

    def build() -> Any:
        torch.manual_seed(0)
        with torch.device(dev):
            model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
        model.config.use_cache = False
        return model.train()

    bare = None
    if rank == 0:
        model = build()
        bare = step_s(model, ids, args.warmup, args.steps, cuda)
        del model
        if cuda:
            torch.cuda.empty_cache()
    dist.barrier()
    from torch.nn.parallel import DistributedDataParallel

    ddp = DistributedDataParallel(build(), device_ids=[local] if cuda else None)
    wrapped = torch.tensor([step_s(ddp, ids, args.warmup, args.steps, cuda)], dtype=torch.float64, device=dev)
    dist.all_reduce(wrapped, op=dist.ReduceOp.MAX)  # the slowest rank's step is the job's
    if rank == 0 and bare is not None:
        bare_rate = args.batch / bare
        ddp_rate = args.batch * n / float(wrapped.item())
        res = {"model": args.model, "layers": args.layers, "batch_per_gpu": args.batch, "seq": args.seq,
               "ranks": n, "dtype": str(dtype), "torch": torch.__version__,
               "bare_step_ms": bare * 1e3, "bare_samples_per_s": bare_rate,
               "ddp_step_ms": float(wrapped.item()) * 1e3, "ddp_samples_per_s": ddp_rate,
               "scaling_efficiency": ddp_rate / (n * bare_rate)}
        for k, v in res.items():
            print(f"{k:>20}: {v:.4g}" if isinstance(v, float) else f"{k:>20}: {v}")
        if args.out:
            args.out.write_text(json.dumps(res, indent=1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
