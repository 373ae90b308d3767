"""`compare` holds a MIG slice against its share of the full GPU: the published Triton sets
(the 2021 Triton MIG article: a full A100-PCIE-40GB against one 3g.20gb slice) and gpu-burn slices
(the 2020 gpu-burn article:
7 x 2,400 / 3 x 4,500 / 2 x 6,700 Gflop/s against 16,700 on the full A100)."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pytest
from test_compare_support import case, metric, refs, result_set
from typer.testing import CliRunner

from llmbench.analysis.compare import compare
from llmbench.analysis.migslice import slice_rows
from llmbench.analysis.runs import load_sets
from llmbench.cli import app
from llmbench.hardware import fingerprint, mig
from llmbench.report.slice_view import slice_table
from llmbench.report.views import comparison_tables
from tests.fake_nvml import FakeNvml

ROOT = Path(__file__).resolve().parents[1]
FULL = ROOT / "llmbench/references/data/published/a100-pcie-40gb/triton-a100-mig-2021.json"
SLICE = ROOT / "llmbench/references/data/published/a100-pcie-40gb-mig-3g.20gb/triton-a100-mig-2021.json"
A100 = "NVIDIA A100-SXM4-40GB"


def _triton() -> Any:
    return compare(load_sets([FULL, SLICE]))


def test_published_triton_pair_against_the_slice_share() -> None:
    rows = slice_rows(_triton())
    assert [(r.metric, r.profile) for r in rows] == [("request_throughput_per_s", "3g.20gb")] * 3  # no e2e_ms
    by_conc = {r.case: r for r in rows}
    r = by_conc["concurrency=2"]  # full 41.8 infer/s, slice 20.4 (the Triton MIG article)
    assert (r.full_value, r.measured) == (41.8, 20.4)
    assert r.share == {"compute": pytest.approx(3 / 7), "memory": 0.5}
    assert r.expected["compute"] == pytest.approx(41.8 * 3 / 7)  # 17.91
    assert r.expected["memory"] == pytest.approx(20.9)
    assert r.vs_expected["compute"] == pytest.approx(20.4 / 17.914, abs=1e-3)  # 1.14x
    assert r.vs_expected["memory"] == pytest.approx(0.976, abs=1e-3)
    assert r.side_by_side == 2 and r.together == pytest.approx(40.8)  # 2 x 3g.20gb fit an A100-40GB
    first = by_conc["concurrency=1"]  # 38.8 vs 19.6: 1.18x its compute share, 1.01x its memory share
    assert (round(first.vs_expected["compute"], 2), round(first.vs_expected["memory"], 2)) == (1.18, 1.01)


def test_table_in_every_comparison_view() -> None:
    titles = [t.title for t in comparison_tables(_triton())]
    assert "MIG slice against its share of the full GPU" in titles
    table = slice_table(_triton())
    assert table is not None
    row = table.rows[1]
    assert row[:2] == ["concurrency=2", "request_throughput_per_s (req/s)"]
    assert row[2:] == ["41.80", "0.43 (3/7) / 0.50 (20/40 GB)", "17.91 / 20.90", "20.40", "1.14x / 0.98x",
                       "2 x 20.40 = 40.80", "0.98x"]


def test_compare_cli_json_and_markdown() -> None:
    res = CliRunner().invoke(app, ["compare", str(FULL), str(SLICE), "-f", "json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)["mig_slices"]
    assert [g["measured"] for g in got] == [19.6, 20.4, 20.2]
    assert got[0]["side_by_side"]["slices"] == 2
    md = CliRunner().invoke(app, ["compare", str(SLICE), str(FULL), "-f", "markdown"])  # either order
    assert "## MIG slice against its share of the full GPU" in md.output
    assert "| 2 x 19.60 = 39.20 | 1.01x |" in md.output


def _gemm(gpu: dict[str, Any], tflops: float) -> Any:
    return result_set({"gpu": gpu}, [case("gemm", {"tool": "gpu-burn", "precision": "fp32"},
                                          {"tflops": metric("tflops", tflops, samples=False)})], suite="burn")


@pytest.mark.parametrize("profile, measured, n", [("1g.5gb", 2.4, 7), ("2g.10gb", 4.5, 3), ("3g.20gb", 6.7, 2)])
def test_slices_side_by_side_gemm(profile: str, measured: float, n: int) -> None:
    """A run on one slice (--gpus MIG-<uuid>) records MIG enabled and the instance's profile."""
    full = _gemm({"name": A100, "slug": "a100-sxm-40gb", "memory_gib": 39.4, "mig_mode": "disabled"}, 16.7)
    part = _gemm({"name": f"{A100} MIG {profile}", "slug": "a100-sxm-40gb", "mig_mode": "enabled",
                  "mig_profile": profile, "visible_devices": "MIG-x"}, measured)
    (r,) = slice_rows(compare(refs(full, part)))
    assert r.side_by_side == n and r.together == pytest.approx(n * measured)
    assert r.together / r.full_value == pytest.approx(n * measured / 16.7)  # 7 x 2.4 = 16.8: 1.01x the full GPU


def test_profile_from_the_recorded_instance() -> None:
    items = mig.all_instances(FakeNvml(mig=True))
    gpu = {"name": A100, "mig_mode": "enabled", "mig_instances": items, "visible_devices": "MIG-fake-1"}
    assert mig.slice_profile(gpu) == "2g.10gb"
    assert mig.slice_profile({"name": f"{A100} MIG 1g.5gb"}) == "1g.5gb"
    assert mig.slice_profile({"name": A100, "mig_mode": "disabled"}) is None
    assert mig.is_slice({"name": A100, "mig_mode": "enabled"}) and not mig.is_slice({"name": A100})


def test_fingerprint_records_the_profile_of_its_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    props = types.SimpleNamespace(name=f"{A100} MIG 2g.10gb", total_memory=9856 * 2**20, major=8, minor=0,
                                  multi_processor_count=28, uuid="")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    monkeypatch.setattr(fingerprint.nvml, "driver_version", lambda: "550.0")
    items = mig.all_instances(FakeNvml(mig=True))
    monkeypatch.setattr(fingerprint.mig, "all_instances", lambda: items)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-fake-0")
    props.name = A100  # the instance, not the name, says which slice
    info = fingerprint.gpu_info()
    assert info is not None and info["mig_profile"] == "3g.20gb"
    monkeypatch.setattr(fingerprint.os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # an idle host: MIG's warning alone
    warn = fingerprint.environment_warnings({"gpu": {**info, "mig_mode": "enabled"}})
    assert warn == ["MIG is enabled on this GPU: figures are for the MIG slice 3g.20gb, not the whole GPU"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert "mig_profile" not in fingerprint.gpu_info()  # type: ignore[operator]


def test_no_table_without_a_slice_or_across_gpu_models() -> None:
    full = _gemm({"name": A100, "mig_mode": "disabled"}, 16.7)
    other = _gemm({"name": "NVIDIA H100 80GB HBM3", "mig_mode": "disabled"}, 60.0)
    assert slice_rows(compare(refs(full, other))) == []
    assert slice_table(compare(refs(full, other))) is None
    h100_slice = _gemm({"name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb", "mig_profile": "3g.40gb"}, 25.0)
    assert slice_rows(compare(refs(full, h100_slice))) == []  # a slice of another GPU model
    two_slices = [_gemm({"name": A100, "mig_profile": p}, 4.0) for p in ("2g.10gb", "3g.20gb")]
    assert slice_rows(compare(refs(*two_slices))) == []  # no full GPU to hold them against
