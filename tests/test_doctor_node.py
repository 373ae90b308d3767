"""`doctor` on a node of several GPUs (harness/doctor.py): peer access between the visible GPUs, the NCCL
version, and that the NVLink-multicast variables reach a process started with the ranks' environment.
torch.cuda is stood in for (no GPU here); the multicast check spawns a real child process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from llmbench.hardware.topology import MULTICAST_OFF_ENV
from llmbench.harness import doctor


@dataclass
class _Props:
    uuid: str = ""


class FakeCuda:
    """torch.cuda of `count` GPUs; `no_peer` the (i, j) pairs without peer access; `nccl` its version
    (None: a torch built without NCCL)."""

    def __init__(self, count: int, no_peer: tuple[tuple[int, int], ...] = (), nccl: Any = (2, 27, 7)) -> None:
        self.count, self.no_peer = count, no_peer
        self.nccl = self if nccl is not None else None
        self._version = nccl

    def is_available(self) -> bool:
        return self.count > 0

    def device_count(self) -> int:
        return self.count

    def can_device_access_peer(self, i: int, j: int) -> bool:
        return (i, j) not in self.no_peer

    def get_device_properties(self, i: int) -> _Props:
        return _Props()

    def version(self) -> Any:
        return self._version


def test_one_gpu_or_none_has_no_node_checks() -> None:
    assert doctor.node_checks(FakeCuda(1)) == [] and doctor.node_checks(FakeCuda(0)) == []


def test_a_node_checks_peers_nccl_and_multicast(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in MULTICAST_OFF_ENV:
        monkeypatch.delenv(k, raising=False)
    peers, nccl, multicast = doctor.node_checks(FakeCuda(2))
    assert (peers.name, peers.level) == ("gpu peers", "ok") and "peer access between every pair" in peers.detail
    assert (nccl.level, nccl.detail) == ("ok", "NCCL 2.27.7")
    assert multicast.level == "ok" and "NCCL_NVLS_ENABLE=0" in multicast.detail
    assert "none set by the machine" in multicast.detail  # llmbench's own defaults reached the child


def test_missing_peer_access_and_a_torch_without_nccl_are_said(monkeypatch: pytest.MonkeyPatch) -> None:
    peers = doctor.peer_check(FakeCuda(2, no_peer=((1, 0),)), 2)
    assert peers.level == "warn" and "no peer access 1->0" in peers.detail
    assert doctor.nccl_check(FakeCuda(2, nccl=None)).level == "fail"


def test_the_multicast_check_reads_the_machines_values_back_from_a_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVSHMEM_DISABLE_NVLS", "yes")  # the machine's own value: it must arrive as it is
    check = doctor.multicast_check()
    assert check.level == "ok" and "NVSHMEM_DISABLE_NVLS=yes" in check.detail
    assert "the machine sets NVSHMEM_DISABLE_NVLS" in check.detail
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    assert doctor.multicast_check().level == "warn"  # asked for: said, not hidden


def test_a_variable_lost_on_the_way_to_the_child_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor.subprocess, "run", _run_without("NCCL_NVLS_ENABLE"))
    check = doctor.multicast_check()
    assert check.level == "fail" and "NCCL_NVLS_ENABLE=0 arrived as None" in check.detail


def _run_without(name: str) -> Any:
    """subprocess.run that starts the child without `name` in its environment (a builder that drops it)."""
    import subprocess

    real = subprocess.run

    def run(cmd: list[str], env: dict[str, str], **kw: Any) -> Any:
        return real(cmd, env={k: v for k, v in env.items() if k != name}, **kw)

    return run
