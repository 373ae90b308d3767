"""One rank of the `collectives` scenario (its declared `rank_entry`), started by the harness's torchrun
launcher: checks the collective's result once on rank-valued data, then times warm-up + timed iterations
of it, each on its own (CUDA events on a GPU). Returns its times, the bytes S (nccl-tests' size, see
scenarios/collectives.py), its code path and its GPU's NVLink ceiling. Nothing runs at import."""

from __future__ import annotations

from typing import Any

from llmbench.scenarios.ranks import comm_facts, start_rank, timed_iterations

CALLS = {
    "all_reduce": "torch.distributed.all_reduce(x) (in place, SUM)",
    "all_gather": "torch.distributed.all_gather_into_tensor(out, x)",
    "reduce_scatter": "torch.distributed.reduce_scatter_tensor(out, x) (SUM)",
    "all_to_all": "torch.distributed.all_to_all_single(out, x) (equal splits)",
}


def collective_rank(spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    from llmbench.hardware.interconnect import nvlink_ceiling
    from llmbench.scenarios.collectives import message_elements

    me = start_rank(spec["device"])
    op, n = spec["op"], me.world
    dtype = torch.bfloat16 if spec["dtype"] == "bf16" else torch.float32
    count = message_elements(spec["size_bytes"], dtype.itemsize, op, n)
    if count < n:
        raise ValueError(f"size {spec['size_bytes']} bytes holds fewer than {n} {spec['dtype']} elements")
    ins, outs = buffers(op, count, n, dtype, me.device)
    call = collective(op, ins, outs)
    check(op, ins, outs, call, me.rank, n)
    ins.zero_()  # sums of zeros stay zero over any number of in-place all-reduces
    for i in range(spec["warmup"]):
        call(i)
    dist.barrier()
    times = timed_iterations(call, spec["iters"], me.cuda)
    path = comm_facts(me) | {"call": CALLS[op], "dtype": str(dtype).removeprefix("torch."), "checked": True}
    if me.cuda:
        path["nccl_algo"] = "NCCL's own choice (llmbench never sets NCCL_ALGO)"
    link = None
    if me.cuda:
        props = torch.cuda.get_device_properties(me.device)
        ceiling = nvlink_ceiling(str(props.uuid), (props.major, props.minor))
        link = ceiling.to_dict() if ceiling else None
    path["interconnect"] = link["kind"] if link else ("host (gloo, CPU processes)" if not me.cuda else "no NVLink")
    out = {"rank": me.rank, "world": n, "time_s": times, "bytes": count * dtype.itemsize, "code_path": path,
           "interconnect": link}
    dist.barrier()
    dist.destroy_process_group()
    return out


def buffers(op: str, count: int, n: int, dtype: Any, device: Any) -> tuple[Any, Any]:
    """The input and output tensors of `op` for S = `count` elements (see the scenario's docstring)."""
    import torch

    chunk = count // n
    in_count, out_count = {"all_reduce": (count, count), "all_gather": (chunk, count),
                           "reduce_scatter": (count, chunk), "all_to_all": (count, count)}[op]
    ins = torch.zeros(in_count, dtype=dtype, device=device)
    return ins, (ins if op == "all_reduce" else torch.empty(out_count, dtype=dtype, device=device))


def collective(op: str, ins: Any, outs: Any) -> Any:
    """One call of `op` on the buffers (the iteration index is ignored)."""
    import torch.distributed as dist

    calls = {"all_reduce": lambda _i: dist.all_reduce(ins),
             "all_gather": lambda _i: dist.all_gather_into_tensor(outs, ins),
             "reduce_scatter": lambda _i: dist.reduce_scatter_tensor(outs, ins),
             "all_to_all": lambda _i: dist.all_to_all_single(outs, ins)}
    return calls[op]


def check(op: str, ins: Any, outs: Any, call: Any, rank: int, n: int) -> None:
    """Run `op` once on rank-valued data (rank r sends r + 1) and raise unless the result is right."""
    import torch

    ins.fill_(rank + 1)
    call(-1)
    total = n * (n + 1) / 2
    chunk = outs.numel() // n if op != "reduce_scatter" else outs.numel()
    if op in ("all_reduce", "reduce_scatter"):
        want = torch.full_like(outs, total)
    else:  # all_gather and all_to_all: chunk i came from rank i
        want = torch.arange(1, n + 1, dtype=outs.dtype, device=outs.device).repeat_interleave(chunk)
    if not torch.equal(outs, want):
        raise RuntimeError(f"{op} over {n} ranks returned a wrong result on rank {rank}")
