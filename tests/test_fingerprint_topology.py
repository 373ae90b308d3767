"""Node identity: the fingerprint records how many GPUs a run saw and how they are joined (NVLink links
up per GPU, the PCIe link) from NVML, simulated here at the pynvml boundary; a bundle's name shows the
GPU count of a multi-GPU run and keeps one-GPU names as they were."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from llmbench.bundle import bundle_name, gpu_count, write_new_bundle
from llmbench.hardware import fingerprint, mig, nvml, topology
from tests.fake_nvml import FakeNvmlError


class NodeNvml:
    """Simulated pynvml of a node: GPU i has `links[i]` NVLink links up (None: no NVLink, NOT_SUPPORTED
    on every link) and a PCIe link trained down to gen1 at idle, gen5 x16 at most. Every other query
    answers NOT_SUPPORTED, as NVML does for what a device lacks."""

    NVMLError = FakeNvmlError
    NVML_NVLINK_MAX_LINKS = 18

    def __init__(self, links: list[int | None]) -> None:
        self.links = links

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> int:
        if not uuid.startswith("GPU-node-"):
            raise FakeNvmlError(13)  # NOT_FOUND
        return int(uuid.removeprefix("GPU-node-"))

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        if self.links[h] is None:
            raise FakeNvmlError(3)  # NOT_SUPPORTED
        return 1 if link < (self.links[h] or 0) else 0

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        return 1

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        return 16

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        return 16

    def __getattr__(self, name: str) -> Any:
        if name.startswith("nvml"):
            def unsupported(*args: Any) -> Any:
                raise FakeNvmlError(3)
            return unsupported
        raise AttributeError(name)


def node(monkeypatch: pytest.MonkeyPatch, links: list[int | None]) -> NodeNvml:
    fake = NodeNvml(links)
    monkeypatch.setattr(nvml, "library", lambda: fake)
    return fake


def test_nvlink_links_and_pcie_are_read_per_gpu_and_labelled(monkeypatch: pytest.MonkeyPatch) -> None:
    node(monkeypatch, [18, 18])
    links = topology.interconnect([0, 1])
    assert links == [{"pcie_gen": 1, "pcie_width": 16, "pcie_gen_max": 5, "pcie_width_max": 16, "nvlink_links": 18}] * 2
    assert topology.topology_label(links) == "NVLink, 18 links per GPU"
    assert topology.topology_label(links[:1]) is None  # one GPU: nothing joins it


def test_gpus_without_nvlink_are_labelled_by_their_pcie_link(monkeypatch: pytest.MonkeyPatch) -> None:
    node(monkeypatch, [None, 0])
    links = topology.interconnect([0, 1])
    assert "nvlink_links" not in links[0] and links[1]["nvlink_links"] == 0
    assert topology.topology_label(links) == "PCIe gen5 x16"  # the maximum: an idle link trains down
    monkeypatch.setattr(nvml, "library", lambda: None)  # no NVML: nothing said, nothing invented
    assert topology.interconnect([0]) == [{}] and topology.topology_label([{}, {}]) is None


@dataclass
class Props:
    uuid: str
    name: str = "NVIDIA H100 80GB HBM3"
    total_memory: int = 80 * 2**30
    major: int = 9
    minor: int = 0
    multi_processor_count: int = 132


def test_the_fingerprint_records_the_gpu_count_and_how_they_are_joined(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    node(monkeypatch, [18, 18])
    monkeypatch.setattr(mig, "all_instances", lambda: [])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: Props(uuid=f"GPU-node-{i}"))
    gpu = fingerprint.gpu_info()
    assert gpu is not None and gpu["count"] == 2
    assert gpu["topology"] == "NVLink, 18 links per GPU"
    assert [e["nvlink_links"] for e in gpu["interconnect"]] == [18, 18]
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    one = fingerprint.gpu_info()
    assert one is not None and "topology" not in one and len(one["interconnect"]) == 1


def _set(count: int) -> Any:
    from llmbench.results import ResultSet

    return ResultSet(suite="s", env={"gpu": {"name": "NVIDIA H100 80GB HBM3", "slug": "h100-sxm-80gb", "count": count}})


def test_bundle_names_show_the_gpu_count_of_a_multi_gpu_run(tmp_path: Path) -> None:
    at = datetime(2026, 11, 26, 1, 2, 3, tzinfo=timezone.utc)
    assert bundle_name("h100-sxm-80gb", at) == "h100-sxm-80gb-20261126T010203Z.tar.gz"  # one GPU: as before
    assert bundle_name("h100-sxm-80gb", at, gpus=2) == "h100-sxm-80gb-x2-20261126T010203Z.tar.gz"
    assert gpu_count([_set(1), _set(2)]) == 2 and gpu_count([]) == 1
    assert write_new_bundle(tmp_path, "h100-sxm-80gb", {"a.json": _set(2)}).name.startswith("h100-sxm-80gb-x2-2026")
    assert write_new_bundle(tmp_path, "h100-sxm-80gb", {"a.json": _set(1)}).name.startswith("h100-sxm-80gb-2026")
