"""One rank of the `ddp` scenario (its declared `rank_entry`), started by the harness's torchrun
launcher (harness/launchers/torchrun.py): builds the model on its device, wraps it in DDP or FSDP2
(fully_shard), trains warm-up + timed steps on the learnable task and returns its step times and
losses, which the launcher hands to the case. Nothing runs at import (the scenario registry imports
this module)."""

from __future__ import annotations

import itertools
import os
import time
from typing import Any


def train_rank(spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    from transformers import AutoModelForCausalLM

    from llmbench.models.build import make_config
    from llmbench.models.synthetic import progression_batch

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    cuda = spec["device"] == "cuda"
    if cuda:
        torch.cuda.set_device(local)
    dev = torch.device(f"cuda:{local}" if cuda else "cpu")
    dist.init_process_group("nccl" if cuda else "gloo", device_id=dev if cuda else None)
    cfg = make_config(spec["model"])
    if spec.get("layers"):
        cfg.num_hidden_layers = spec["layers"]
    torch.manual_seed(0)  # the same initial weights on every rank
    with torch.device(dev):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16 if cuda else torch.float32)
    model.config.use_cache = False
    model.train()
    if spec["parallel"] == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
        wrapped: Any = model
    else:
        from torch.nn.parallel import DistributedDataParallel

        wrapped = DistributedDataParallel(model, device_ids=[local] if cuda else None)
    opt = torch.optim.AdamW(wrapped.parameters(), lr=1e-4)
    batches = [progression_batch(int(cfg.vocab_size), spec["batch_size"], spec["seq_len"], step=i, seed=rank,
                                 device=str(dev)) for i in range(8)]
    losses: list[Any] = []

    def step(i: int) -> None:
        b = batches[i % len(batches)]
        loss = wrapped(input_ids=b, labels=b).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())

    for i in range(spec["warmup"]):
        step(i)
    dist.barrier()
    if cuda:
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(spec["steps"] + 1)]
        ev[0].record()
        for i in range(spec["steps"]):
            step(i)
            ev[i + 1].record()
        torch.cuda.synchronize()
        step_s = [ev[i].elapsed_time(ev[i + 1]) / 1e3 for i in range(spec["steps"])]
        peak = torch.cuda.max_memory_allocated() / 2**30
    else:
        marks = [time.perf_counter()]
        for i in range(spec["steps"]):
            step(i)
            marks.append(time.perf_counter())
        step_s = [b - a for a, b in itertools.pairwise(marks)]
        peak = None
    out = {"rank": rank, "world": world, "step_s": step_s, "losses": [float(x) for x in losses],
           "peak_memory_gib": peak}
    dist.barrier()
    dist.destroy_process_group()
    return out
