"""One rank of the `ddp` scenario (its declared `rank_entry`), started by the harness's torchrun
launcher (harness/launchers/torchrun.py): builds the model on its device, wraps it as the spec says and trains
warm-up + timed steps on the learnable task, returning its step times, losses and code path.

`wrapper`: "ddp" (DistributedDataParallel), "fsdp" (FSDP2 fully_shard per decoder layer, then the
root) or "none": the bare model in one process, no torch.distributed at all (the true one-GPU
baseline). A DDP rank of a world above one also times the same steps under `no_sync()` (no gradient
all-reduce): the difference of the medians is the communication the backward pass did not hide.
Nothing runs at import (the scenario registry imports this module)."""

from __future__ import annotations

import statistics
from typing import Any

from llmbench.scenarios.ranks import comm_facts, start_rank, timed_iterations

NO_SYNC_METHOD = ("median step time minus the median of the same steps under DDP no_sync() (no gradient "
                  "all-reduce), same rank, same batches, right after the timed steps")
FSDP_NO_EXPOSED = ("not measured: FSDP2 without gradient sync keeps unsharded gradients, so its optimizer "
                   "step would update nothing and the difference would not be communication alone")


def train_rank(spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    from transformers import AutoModelForCausalLM

    from llmbench.models.build import make_config
    from llmbench.models.synthetic import progression_batch

    wrapper = spec.get("wrapper", spec.get("parallel", "ddp"))
    me = start_rank(spec["device"], process_group=wrapper != "none")
    cfg = make_config(spec["model"])
    if spec.get("layers"):
        cfg.num_hidden_layers = spec["layers"]
    torch.manual_seed(0)  # the same initial weights on every rank
    dtype = torch.bfloat16 if me.cuda else torch.float32
    with torch.device(me.device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    model.config.use_cache = False
    model.train()
    wrapped, path = wrap(model, wrapper, me)
    path["param_dtype"] = str(dtype).removeprefix("torch.")
    path["mixed_precision"] = "none: weights, gradients and optimizer state in param_dtype (no autocast)"
    opt = torch.optim.AdamW(wrapped.parameters(), lr=1e-4)
    batches = [progression_batch(int(cfg.vocab_size), spec["batch_size"], spec["seq_len"], step=i, seed=me.rank,
                                 device=str(me.device)) for i in range(8)]
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
    if dist.is_initialized():
        dist.barrier()
    step_s = timed_iterations(step, spec["steps"], me.cuda)
    timed_losses = [float(x) for x in losses]
    peak = torch.cuda.max_memory_allocated() / 2**30 if me.cuda else None
    out: dict[str, Any] = {"rank": me.rank, "world": me.world, "step_s": step_s, "losses": timed_losses,
                           "peak_memory_gib": peak}
    if wrapper == "ddp" and me.world > 1:
        with wrapped.no_sync():
            step(0)  # one untimed step into the mode
            no_sync_s = timed_iterations(step, spec["steps"], me.cuda)
        out["no_sync_step_s"] = no_sync_s
        out["exposed_comm_s"] = statistics.median(step_s) - statistics.median(no_sync_s)
        path["exposed_comm"] = NO_SYNC_METHOD
    elif wrapper == "fsdp":
        path["exposed_comm"] = FSDP_NO_EXPOSED
    out["code_path"] = path
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    return out


def wrap(model: Any, wrapper: str, me: Any) -> tuple[Any, dict[str, Any]]:
    """The model as the rank trains it, and what that wrapper does (the rank's code path)."""
    if wrapper == "none":
        return model, {"wrapper": "none (bare model, one process, no torch.distributed)", "world_size": 1}
    path = comm_facts(me)
    if wrapper == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
        return model, path | {
            "wrapper": "fsdp2 (torch.distributed.fsdp.fully_shard per decoder layer, then the root)",
            "sharding": f"full shard of parameters, gradients and optimizer state over a 1-D mesh of {me.world}",
            "reshard_after_forward": "torch default (None): True for each decoder layer, False for the root",
            "fsdp_mp_policy": "MixedPrecisionPolicy() default: parameters and gradient reduction in param_dtype",
            "comm_overlap": "torch defaults: the next layer's all-gather prefetched; gradient reduce-scatter "
                            "per layer during backward",
        }
    from torch.nn.parallel import DistributedDataParallel

    ddp = DistributedDataParallel(model, device_ids=[me.local] if me.cuda else None)
    return ddp, path | {
        "wrapper": "ddp (torch.nn.parallel.DistributedDataParallel)",
        "bucket_cap_mb": ddp.bucket_bytes_cap / 2**20,
        "gradient_as_bucket_view": bool(ddp.gradient_as_bucket_view),
        "static_graph": bool(ddp.static_graph),
        "find_unused_parameters": bool(ddp.find_unused_parameters),
        "broadcast_buffers": bool(ddp.broadcast_buffers),
        "comm_overlap": "all-reduce of each gradient bucket started from autograd hooks as the bucket fills "
                        "(overlaps the rest of backward); default comm hook",
    }
