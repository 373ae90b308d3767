"""The GPU spec table: driver names map to the right part, every entry is sourced and dense-only."""

from __future__ import annotations

import pytest

from llmbench.hardware.specs import PRECISIONS, SPECS, lookup, match_name, slug_for
from llmbench.report.specs_view import specs_tables

DRIVER_NAMES = {
    "NVIDIA H100 80GB HBM3": "h100-sxm-80gb",
    "NVIDIA H100 PCIe": "h100-pcie-80gb",
    "NVIDIA H100 NVL": "h100-nvl-94gb",
    "NVIDIA H200": "h200-sxm-141gb",
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",
    "NVIDIA A100-SXM4-40GB": "a100-sxm-40gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb",
    "NVIDIA L40S": "l40s-48gb",
    "NVIDIA L4": "l4-24gb",
    "NVIDIA A10": "a10-24gb",
    "NVIDIA GeForce RTX 3090": "rtx-3090-24gb",
    "NVIDIA GeForce RTX 4090": "rtx-4090-24gb",
    "NVIDIA B200": "b200-180gb",
}


@pytest.mark.parametrize(("name", "slug"), sorted(DRIVER_NAMES.items()))
def test_driver_names_map_to_slugs(name: str, slug: str) -> None:
    assert slug_for(name) == slug


@pytest.mark.parametrize(
    ("name", "mem", "slug"),
    [
        ("NVIDIA A100-SXM4-80GB", 79.2, "a100-sxm-80gb"),
        ("NVIDIA A100-SXM4-40GB", 39.4, "a100-sxm-40gb"),
        ("NVIDIA A100 80GB PCIe", 79.2, "a100-pcie-80gb"),
        ("NVIDIA A100-PCIE-40GB", 39.4, "a100-pcie-40gb"),
        ("NVIDIA H100 80GB HBM3", 79.2, "h100-sxm-80gb"),
        ("NVIDIA H200", 139.8, "h200-sxm-141gb"),
    ],
)
def test_memory_size_picks_the_part(name: str, mem: float, slug: str) -> None:
    assert slug_for(name, mem) == slug


def test_unknown_and_near_miss_names() -> None:
    assert match_name("NVIDIA A10G") is None and match_name("NVIDIA L40") is None
    assert match_name("NVIDIA H200 NVL") is None  # a different board from the SXM part
    assert match_name("NVIDIA GeForce RTX 3090 Ti") is None
    assert slug_for("NVIDIA Tesla T4", 15.0) == "tesla-t4-15gb"


def test_every_spec_is_sourced_and_consistent() -> None:
    assert len({s.slug for s in SPECS}) == len(SPECS)
    for s in SPECS:
        assert "datasheet" in s.source or "whitepaper" in s.source or "specifications" in s.source
        assert set(s.tflops) <= set(PRECISIONS) and s.tflops.get("bf16", 0) > 0
        assert s.bandwidth_tb_s > 0 and s.memory_gib > 0 and s.tdp_w > 0
        assert s.tflops.get("fp16") == s.tflops.get("bf16")
        if "fp8" in s.tflops:
            assert s.cc >= (8, 9)


def test_dense_figures_not_sparse() -> None:
    h100 = lookup("h100-sxm-80gb")
    assert h100 is not None and h100.tflops["bf16"] == 989.5 and h100.tflops["fp8"] == 1979
    a100 = lookup("a100-sxm-80gb")
    assert a100 is not None and a100.tflops["tf32"] == 156 and "fp8" not in a100.tflops
    pcie = lookup("h100-pcie-80gb")
    assert pcie is not None and pcie.tflops["bf16"] < h100.tflops["bf16"]
    assert lookup("h200-sxm-141gb").peak("bf16") == 989.5  # type: ignore[union-attr]


def test_specs_view_lists_every_gpu_with_its_source() -> None:
    table, sources = specs_tables()
    assert [r[0] for r in table.rows] == [s.slug for s in SPECS]
    assert all(r[1] for r in sources.rows)
