"""The host's CPU cores, shared out among the GPU slots of a run that puts cases side by side: each slot's
case processes (and what they start: compile workers, an engine's core process) are bound to cores of
their own, so one case's compilation or host work does not take the CPU time of a case timing beside it.

Cores, not logical CPUs: the hyper-threads of one core share its execution units, so a core's threads go
to one slot together. Cores are dealt out in (socket, core) order, contiguously, so that a slot's share
stays within one socket where the count allows. The share binds a process only where the runner asks
(`CPUS_ENV`, set per case process by harness/launch.GpuSlots); a serial run's case has the whole host."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from itertools import groupby
from pathlib import Path

CPUS_ENV = "LLMBENCH_CPUS"  # a case process binds itself to these CPUs ("0-7,16-23") before it imports torch
SYS_CPU = Path("/sys/devices/system/cpu")


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity; every CPU where the platform has no affinity)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def host_cores(cpus: Iterable[int] | None = None, sys_cpu: Path = SYS_CPU) -> list[tuple[int, ...]]:
    """`cpus` (default: the allowed ones) grouped by physical core, in (socket, core) order; a CPU whose
    topology Linux does not publish is a core of its own."""
    keys: dict[tuple[int, int], list[int]] = {}
    for cpu in sorted(allowed_cpus() if cpus is None else cpus):
        topo = sys_cpu / f"cpu{cpu}" / "topology"
        try:
            key = (int((topo / "physical_package_id").read_text()), int((topo / "core_id").read_text()))
        except (OSError, ValueError):
            key = (-1, cpu)
        keys.setdefault(key, []).append(cpu)
    return [tuple(v) for _, v in sorted(keys.items())]


def cpu_shares(n: int, cores: Sequence[tuple[int, ...]] | None = None) -> list[tuple[int, ...]]:
    """`n` shares of the host's cores, as even as they divide (the first shares get the extra core), each
    a contiguous run of cores with all their threads. Fewer cores than shares: the logical CPUs are
    dealt out instead; fewer CPUs than shares: shares repeat CPUs (slots then share them)."""
    cores = list(host_cores() if cores is None else cores)
    if n < 1:
        raise ValueError(f"cpu_shares needs one share or more, got {n}")
    units: list[tuple[int, ...]] = cores if len(cores) >= n else [(c,) for core in cores for c in core]
    if len(units) < n:
        return [units[i % len(units)] for i in range(n)]
    size, extra = divmod(len(units), n)
    out: list[tuple[int, ...]] = []
    start = 0
    for i in range(n):
        end = start + size + (i < extra)
        out.append(tuple(sorted(c for u in units[start:end] for c in u)))
        start = end
    return out


def cpu_list(cpus: Iterable[int]) -> str:
    """CPUs as Linux writes them: "0-7,16-23"."""
    runs = [[c for _, c in run] for _, run in groupby(enumerate(sorted(set(cpus))), key=lambda ic: ic[1] - ic[0])]
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def parse_cpu_list(text: str) -> set[int]:
    """"0-7,16-23" -> {0, ..., 7, 16, ..., 23}; ValueError for anything else."""
    out: set[int] = set()
    for part in filter(None, text.replace(" ", "").split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    if not out:
        raise ValueError(f"no CPUs in {text!r}")
    return out


def bind_from_env(env: dict[str, str] | None = None) -> str | None:
    """Bind this process (and what it starts later) to the CPUs `CPUS_ENV` names; the list bound, or None
    where the variable is unset or the platform cannot bind. A CPU outside this process's own affinity is
    left out (a container's limit stands); none left: nothing is bound."""
    text = (os.environ if env is None else env).get(CPUS_ENV)
    if not text or not hasattr(os, "sched_setaffinity"):
        return None
    cpus = parse_cpu_list(text) & set(allowed_cpus())
    if not cpus:
        return None
    os.sched_setaffinity(0, cpus)
    return cpu_list(cpus)
