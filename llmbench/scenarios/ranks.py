"""What the scenarios that run torchrun ranks (ddp, collectives) share: the skip of a case asking for
more GPUs than are visible, and inside a rank its start (device, process group) with NVLink multicast
kept off, and the communication facts its code path records. No torch at import."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

from llmbench.hardware.topology import MULTICAST_OFF_ENV, multicast_off
from llmbench.measure import quiet
from llmbench.precision import DeviceInfo

# NVLink multicast stays off in every rank (hardware/topology.py: the machine's own setting stands where it
# gives one, else off). llmbench never sets NCCL_ALGO.
# the variables a rank's code path records (unset ones as None): they choose what NCCL runs
RECORDED_ENV = (*MULTICAST_OFF_ENV, "NCCL_ALGO", "NCCL_PROTO")


def more_gpus_than_visible(gpus: int, device: DeviceInfo) -> str | None:
    """Why a case of `gpus` ranks cannot run here (on a GPU machine with fewer visible); None if it can."""
    if device.is_cuda:
        import torch

        visible = torch.cuda.device_count()
        if gpus > visible:
            return f"the case asks for {gpus} GPUs; {visible} visible here (CUDA_VISIBLE_DEVICES / --gpus)"
    return None


@dataclass(frozen=True)
class Rank:
    rank: int
    world: int
    local: int
    device: Any  # torch.device
    cuda: bool


def start_rank(device_kind: str, *, process_group: bool = True) -> Rank:
    """This torchrun rank: its device (the LOCAL_RANK-th GPU, or the CPU) and, unless told not to, the
    default process group (NCCL on a GPU, gloo on a CPU), multicast kept off first."""
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", rank))
    cuda = device_kind == "cuda"
    if cuda:
        torch.cuda.set_device(local)
    dev = torch.device(f"cuda:{local}" if cuda else "cpu")
    if process_group:
        os.environ.update(multicast_off(os.environ))
        dist.init_process_group("nccl" if cuda else "gloo", device_id=dev if cuda else None)
    return Rank(rank, world, local, dev, cuda)


def comm_facts(rank: Rank) -> dict[str, Any]:
    """The communication part of a rank's code path: backend, NCCL version, the variables that steer it."""
    import torch
    import torch.distributed as dist

    backend = dist.get_backend() if dist.is_initialized() else None
    out: dict[str, Any] = {"backend": backend, "world_size": rank.world}
    if backend == "nccl":
        out["nccl_version"] = ".".join(map(str, torch.cuda.nccl.version()))
    out["env"] = {k: os.environ.get(k) for k in RECORDED_ENV}
    return out


def timed_iterations(fn: Any, iters: int, cuda: bool) -> list[float]:
    """Seconds of each of `iters` calls of `fn`, back to back: CUDA events around each on a GPU (one
    synchronisation at the end), the host clock on a CPU (where gloo and the CPU ops return done)."""
    import time

    import torch

    quiet.timed()  # beside other cases: the case's timed part (every rank speaks for it)
    if cuda:
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
        ev[0].record()
        for i in range(iters):
            fn(i)
            ev[i + 1].record()
        torch.cuda.synchronize()
        return [ev[i].elapsed_time(ev[i + 1]) / 1e3 for i in range(iters)]
    marks = [time.perf_counter()]
    for i in range(iters):
        fn(i)
        marks.append(time.perf_counter())
    return [b - a for a, b in itertools.pairwise(marks)]
