"""The host's cores shared out among a run's GPU slots (hardware/cpus.py): by physical core (a core's
hyper-threads go to one slot), contiguous in (socket, core) order, as even as they divide; and a case
process binds itself to the share it is given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.hardware.cpus import CPUS_ENV, bind_from_env, cpu_list, cpu_shares, host_cores, parse_cpu_list
from llmbench.harness.launch import GpuSlots


def _topology(root: Path, cpus: dict[int, tuple[int, int]]) -> Path:
    """A /sys/devices/system/cpu tree: cpu -> (socket, core)."""
    for cpu, (socket, core) in cpus.items():
        topo = root / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text(f"{socket}\n")
        (topo / "core_id").write_text(f"{core}\n")
    return root


def test_hyper_threads_of_a_core_stay_together_and_sockets_stay_apart(tmp_path: Path) -> None:
    # 2 sockets x 4 cores, hyper-threads numbered as Linux does on most servers: core c's siblings are c and c+8
    layout = {c: (c // 4, c % 4) for c in range(8)} | {c + 8: (c // 4, c % 4) for c in range(8)}
    sys_cpu = _topology(tmp_path, layout)
    cores = host_cores(range(16), sys_cpu)
    assert cores[:2] == [(0, 8), (1, 9)] and len(cores) == 8
    assert cpu_shares(2, cores) == [(0, 1, 2, 3, 8, 9, 10, 11), (4, 5, 6, 7, 12, 13, 14, 15)]  # one socket each
    four = cpu_shares(4, cores)
    assert four[0] == (0, 1, 8, 9) and len({c for s in four for c in s}) == 16  # every CPU, once
    assert [len(s) for s in cpu_shares(3, cores)] == [6, 6, 4]  # the first shares get the extra core


def test_fewer_cores_than_slots_deals_out_threads_then_repeats() -> None:
    assert cpu_shares(2, [(0, 1)]) == [(0,), (1,)]
    assert cpu_shares(3, [(0,), (1,)]) == [(0,), (1,), (0,)]
    with pytest.raises(ValueError):
        cpu_shares(0, [(0,)])


def test_a_cpu_without_published_topology_is_a_core_of_its_own(tmp_path: Path) -> None:
    assert host_cores([3, 1], tmp_path) == [(1,), (3,)]


def test_cpu_lists_read_and_write_as_linux_does() -> None:
    assert cpu_list([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert parse_cpu_list("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}
    with pytest.raises(ValueError):
        parse_cpu_list(",")


def test_slots_side_by_side_get_their_share_and_an_exclusive_unit_keeps_every_core() -> None:
    slots = GpuSlots("0,1")
    shares = cpu_shares(2)
    first = slots.take(1)
    second = slots.take(1)
    assert first is not None and second is not None
    assert first.env[CPUS_ENV] == cpu_list(shares[0]) and second.env[CPUS_ENV] == cpu_list(shares[1])
    slots.release(first)
    slots.release(second)
    alone = slots.take(1, exclusive=True)
    assert alone is not None and CPUS_ENV not in alone.env
    slots.release(alone)
    both = slots.take(2)  # a unit over every slot has the whole host
    assert both is not None and CPUS_ENV not in both.env


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="the platform cannot bind a process to CPUs")
def test_a_process_binds_itself_to_the_cpus_it_is_given_and_its_children_inherit_them() -> None:
    one = min(os.sched_getaffinity(0))
    code = ("import os, subprocess, sys; from llmbench.hardware.cpus import bind_from_env; print(bind_from_env()); "
            "print(subprocess.run([sys.executable, '-c', 'import os; print(sorted(os.sched_getaffinity(0)))'], "
            "capture_output=True, text=True).stdout.strip())")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, CPUS_ENV: f"{one},100000"},
                         capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == str(one) and out[1] == f"[{one}]"  # a CPU outside the process's own affinity is left out
    assert bind_from_env({}) is None


def test_a_case_process_is_bound_only_where_its_run_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """An LLMBENCH_CPUS this process inherited does not reach a serial run's case processes."""
    from llmbench.harness.isolation import child_env

    monkeypatch.setenv(CPUS_ENV, "0")
    assert CPUS_ENV not in child_env("0") and CPUS_ENV not in GpuSlots("0,1").whole().env
