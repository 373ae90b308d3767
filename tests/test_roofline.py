"""Roofline arithmetic (pure), the measured-ceiling lookup, and the far-below-bound diagnosis."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from llmbench import precision
from llmbench.hardware import roofline as rf
from llmbench.hardware.specs import lookup
from llmbench.models.presets import get_preset
from llmbench.models.shape import ModelShape
from llmbench.redact import machine_paths
from llmbench.scenarios.bandwidth import measured_copy_tb_s

TOY = ModelShape(
    layers=2,
    hidden=8,
    heads=2,
    kv_heads=1,
    head_dim=4,
    linear_params=1000,
    lm_head_params=100,
    embedding_params=100,
)


def test_every_precision_has_a_peak_in_the_spec_table_and_an_activation_width() -> None:
    from llmbench.hardware.specs import lookup

    h100 = lookup("h100-sxm-80gb")
    assert h100 is not None
    for p in precision.PRECISIONS.values():
        assert h100.tflops.get(p.peak_key), f"{p.name} computes on {p.peak_key!r}, which the spec table lacks"
    assert rf.act_bytes("fp32") == 4 and rf.act_bytes("bf16") == 2 and rf.act_bytes("int4") == 2
    # weight-only formats multiply in bf16; LLM.int8() on the int8 units (one answer for roofline and projection)
    assert precision.get("int4").peak_key == "bf16" and precision.get("llm-int8").peak_key == "int8"


def test_decode_bytes_weights_at_stored_bits_plus_kv_cache() -> None:
    assert TOY.kv_bytes_per_token(2) == 2 * 2 * 1 * 4 * 2  # K and V, layers, kv heads, head dim, bytes
    # int4-like: 1000 params at 4 bits, lm_head at 2 bytes, 3 sequences x 10 cached tokens
    assert rf.decode_step_bytes(TOY, 3, 10, 4.0, 2) == 500 + 200 + 3 * 10 * 32


def test_flops_of_decode_and_prefill() -> None:
    assert rf.decode_step_flops(TOY, 2, 5) == 2 * (2 * 1100 + 4 * 2 * 2 * 4 * 5)
    assert rf.prefill_flops(TOY, 1, 6) == 2 * 1000 * 6 + 2 * 2 * 2 * 4 * 36 + 2 * 100


def test_llama3_8b_bs1_decode_is_memory_bound_near_weights_over_bandwidth() -> None:
    shape = get_preset("llama-3-8b").shape()
    h100 = lookup("h100-sxm-80gb")
    assert h100 is not None
    b = rf.generation_bound(
        shape,
        rf.ceiling_for(h100, "bf16"),
        batch=1,
        input_len=128,
        output_len=128,
        weight_bits=16,
        elem_bytes=2,
    )
    weights_s = (shape.linear_params + shape.lm_head_params) * 2 / 3.35e12
    assert b.decode_kind == "memory"
    assert weights_s < b.decode_step_s < weights_s * 1.01  # the KV cache of ~200 tokens adds < 1%
    int4 = rf.generation_bound(
        shape,
        rf.ceiling_for(h100, "int4"),
        batch=1,
        input_len=128,
        output_len=128,
        weight_bits=4.25,
        elem_bytes=2,
    )
    assert int4.decode_step_s < b.decode_step_s / 2.5  # 4-bit weights: much less to read
    big = rf.generation_bound(
        shape,
        rf.ceiling_for(h100, "bf16"),
        batch=2048,
        input_len=128,
        output_len=8,
        weight_bits=16,
        elem_bytes=2,
    )
    assert big.decode_kind == "compute"
    # a 128-token prefill still reads every weight once: memory bound; 2048 tokens: compute bound
    assert b.prefill_s == pytest.approx(rf.weight_bytes(shape, 16, 2) / 3.35e12)
    long = rf.generation_bound(
        shape,
        rf.ceiling_for(h100, "bf16"),
        batch=1,
        input_len=2048,
        output_len=2,
        weight_bits=16,
        elem_bytes=2,
    )
    assert long.prefill_s == pytest.approx(rf.prefill_flops(shape, 1, 2048) / 989.5e12)


def test_ceiling_prefers_a_measured_bandwidth() -> None:
    h100 = lookup("h100-sxm-80gb")
    assert h100 is not None
    assert rf.ceiling_for(h100, "fp8").peak_tflops == h100.tflops["fp8"]
    assert rf.ceiling_for(h100, "int4").peak_tflops == h100.tflops["bf16"]
    c = rf.ceiling_for(h100, "bf16", measured_tb_s=2.9)
    assert c.bandwidth_tb_s == 2.9 and "measured" in c.bandwidth_source
    assert "datasheet" in rf.ceiling_for(h100, "bf16").bandwidth_source


def test_a_model_sharded_over_two_gpus_has_twice_the_roof_and_half_the_decode_bound() -> None:
    """Tensor parallel 2: each GPU reads half the weights, so the memory-bound decode step's floor halves
    (an efficiency against one GPU's roof could pass 1: the 70B TP2 case read 1.12 before this)."""
    h200 = lookup("h200-sxm-141gb")
    assert h200 is not None
    one = rf.ceiling_for(h200, "fp8")
    two = one.over(2)
    assert (two.bandwidth_tb_s, two.peak_tflops) == (2 * one.bandwidth_tb_s, 2 * one.peak_tflops)
    assert "x2 GPUs" in two.bandwidth_source and one.over(1) is one
    shape = get_preset("llama-3-70b").shape()
    step = {c: rf.generation_bound(shape, c, batch=1, input_len=128, output_len=128, weight_bits=8,
                                   elem_bytes=2).decode_step_s for c in (one, two)}
    assert step[two] == pytest.approx(step[one] / 2)


def _ceilings(path, tb: float, kind: str = "d2d", status: str = "ok") -> None:
    case = {
        "id": "bandwidth/x",
        "scenario": "bandwidth",
        "params": {"kind": kind, "size_mib": 1024},
        "status": status,
        "metrics": {"tb_per_s": {"value": tb, "unit": "TB/s"}},
    }
    path.write_text(json.dumps({"schema_version": 1, "suite": "ceilings", "cases": [case]}))


def test_measured_bandwidth_comes_from_the_newest_ceilings_with_a_d2d_case(tmp_path) -> None:
    assert measured_copy_tb_s("h100-sxm-80gb", tmp_path) is None
    d = tmp_path / "h100-sxm-80gb"
    d.mkdir()
    _ceilings(d / "ceilings-2026-01-01T00-00-00Z.json", 2.8)
    _ceilings(d / "ceilings-2026-02-01T00-00-00Z.json", 3.0)
    _ceilings(d / "ceilings-2026-03-01T00-00-00Z.json", 9.9, kind="h2d")  # newest, but no d2d case
    _ceilings(d / "ceilings-2026-04-01T00-00-00Z.json", 9.9, status="failed")
    (d / "quickstart-2026-05-01T00-00-00Z.json").write_text("{}")
    got = measured_copy_tb_s("h100-sxm-80gb", tmp_path)
    assert got == 3.0 and got.source == str(d / "ceilings-2026-02-01T00-00-00Z.json")
    h100 = lookup("h100-sxm-80gb")
    assert h100 is not None
    assert rf.ceiling_for(h100, "bf16", got).bandwidth_source == f"measured (ceilings suite, device copy, {got.source})"


def test_ceilings_come_from_the_configured_source_never_the_working_directory(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "here" / "results" / "h100-sxm-80gb"
    here.mkdir(parents=True)
    _ceilings(here / "ceilings-2026-01-01T00-00-00Z.json", 9.9)  # the working directory's: never read by default
    monkeypatch.chdir(tmp_path / "here")
    monkeypatch.delenv(rf.CEILINGS_ENV, raising=False)
    assert measured_copy_tb_s("h100-sxm-80gb") is None
    named = tmp_path / "mine.json"
    _ceilings(named, 2.5)
    out = tmp_path / "out" / "h100-sxm-80gb"
    out.mkdir(parents=True)
    _ceilings(out / "ceilings-2026-01-01T00-00-00Z.json", 3.1)
    monkeypatch.setenv(rf.CEILINGS_ENV, str(named))  # a set named itself
    assert measured_copy_tb_s("h100-sxm-80gb") == 2.5
    monkeypatch.setenv(rf.CEILINGS_ENV, str(tmp_path / "out"))  # a results folder
    got = measured_copy_tb_s("h100-sxm-80gb")
    assert got == 3.1 and got.source == str(out / "ceilings-2026-01-01T00-00-00Z.json")
    assert measured_copy_tb_s("h200-sxm-141gb") is None  # another GPU's ceiling is not this one's


def test_the_case_processes_are_told_where_ceilings_are_as_absolute_paths(tmp_path, monkeypatch) -> None:
    from llmbench.api import ceilings_env

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(rf.CEILINGS_ENV, raising=False)
    (tmp_path / "committed").mkdir()
    assert ceilings_env(None, Path("out")) == {rf.CEILINGS_ENV: str(tmp_path / "out")}
    both = ceilings_env(None, Path("out"), also=tmp_path / "committed")  # oneshot: then the committed sets
    assert both == {rf.CEILINGS_ENV: f"{tmp_path / 'out'}{os.pathsep}{tmp_path / 'committed'}"}
    assert ceilings_env(None, Path("out"), also=tmp_path / "none") == {rf.CEILINGS_ENV: str(tmp_path / "out")}
    named = tmp_path / "set.json"
    _ceilings(named, 3.0)
    assert ceilings_env(named, Path("out")) == {rf.CEILINGS_ENV: str(named)}
    monkeypatch.setenv(rf.CEILINGS_ENV, "/theirs")  # the user's own setting reaches the cases unchanged
    assert ceilings_env(None, Path("out")) == {}


def test_a_named_ceilings_set_of_another_gpu_is_not_used(tmp_path) -> None:
    other = tmp_path / "h200.json"
    other.write_text(json.dumps({"schema_version": 1, "suite": "ceilings", "env": {"gpu": {"slug": "h200-sxm-141gb"}},
                                 "cases": [{"id": "bandwidth/x", "scenario": "bandwidth", "status": "ok",
                                            "params": {"kind": "d2d"}, "metrics": {"tb_per_s": {"value": 4.5}}}]}))
    assert measured_copy_tb_s("h100-sxm-80gb", other) is None
    assert measured_copy_tb_s("h200-sxm-141gb", other) == 4.5


def test_diagnose_says_host_bound_with_cpu_and_gpu_times() -> None:
    flags = rf.diagnose(0.2, tpot_s=0.025, bound_s=0.005, cpu_step_s=0.024, gpu_step_s=0.006, batch=1)
    assert len(flags) == 1
    assert "host-bound: CPU time per step 24.00 ms vs GPU 6.00 ms" in flags[0]
    assert "try mode=compiled" in flags[0]
    compiled = rf.diagnose(0.2, tpot_s=0.025, bound_s=0.005, cpu_step_s=0.024, gpu_step_s=0.006, batch=1, eager=False)
    assert "host-bound" in compiled[0] and "mode=compiled" not in compiled[0] and "larger batch" in compiled[0]


def test_diagnose_kernel_bound_unknown_and_fine() -> None:
    kernel = rf.diagnose(0.3, tpot_s=0.01, bound_s=0.003, cpu_step_s=0.01, gpu_step_s=0.0095, batch=8)
    assert "kernel-bound" in kernel[0]
    unknown = rf.diagnose(0.3, tpot_s=0.01, bound_s=0.003, cpu_step_s=None, gpu_step_s=None, batch=1)
    assert "unknown" in unknown[0]
    assert rf.diagnose(0.8, tpot_s=0.01, bound_s=0.008, cpu_step_s=0.01, gpu_step_s=0.001, batch=1) == []


def test_busy_time_is_the_union_of_kernel_intervals() -> None:
    assert rf.busy_time([]) == 0.0
    assert rf.busy_time([(0, 2), (1, 3), (5, 6), (5.5, 5.7)]) == 4.0


@pytest.mark.slow
def test_a_run_reads_the_same_ceiling_from_any_folder_and_records_its_set(tmp_path, fault_plugin) -> None:
    """`llmbench run --out OUT` points its case processes at OUT's ceilings sets: from two working
    directories (one holding a decoy ./results) the case gets the same roof and names the set it came
    from; --ceilings names another set."""
    import subprocess
    import sys

    from llmbench.results import load
    from tests.conftest import ROOT, write

    out = tmp_path / "out"
    (out / "h100-sxm-80gb").mkdir(parents=True)
    theirs = out / "h100-sxm-80gb" / "ceilings-20260101T000000Z.json"
    _ceilings(theirs, 3.1)
    decoy = tmp_path / "a" / "results" / "h100-sxm-80gb"
    decoy.mkdir(parents=True)
    _ceilings(decoy / "ceilings-20270101T000000Z.json", 9.9)  # newer, in the working directory: not read
    (tmp_path / "b").mkdir()
    named = tmp_path / "named.json"
    _ceilings(named, 2.2)
    suite = write(tmp_path, 'name = "roof"\n[[case]]\nscenario = "roof"\nmin_iters = 1\nmin_seconds = 0\n')

    env = {**{k: v for k, v in os.environ.items() if k != rf.CEILINGS_ENV}, "PYTHONPATH": str(ROOT)}

    def roof(cwd, runs, *extra: str) -> dict:
        r = subprocess.run([sys.executable, "-m", "llmbench", "run", str(suite), "--cpu", "--out", str(runs), *extra],
                           cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        (case,) = load(sorted(runs.glob("*/roof-*.json"))[-1]).cases
        return case.info

    a = roof(tmp_path / "a", out)  # the run's --out holds the ceilings set: it is the default source
    b = roof(tmp_path / "b", out)
    assert a["bandwidth_tb_s"] == b["bandwidth_tb_s"] == 3.1
    written = machine_paths(str(theirs))  # as the set writes it
    assert a["bandwidth_source"] == b["bandwidth_source"] == f"measured (ceilings suite, device copy, {written})"
    assert roof(tmp_path / "a", tmp_path / "other", "--ceilings", str(named))["bandwidth_tb_s"] == 2.2
    fresh = roof(tmp_path / "a", tmp_path / "fresh")  # no ceilings set under --out: the datasheet, not ./results
    assert fresh["bandwidth_source"].startswith("datasheet")


def test_a_share_above_its_roof_is_flagged_as_read_against_a_measured_ceiling() -> None:
    from llmbench.results import MetricResult

    assert MetricResult.single("roofline_efficiency", 0.9).flags == []
    (flag,) = MetricResult.single("roofline_efficiency", 1.2).flags
    assert "above 1" in flag and "measured" in flag
    assert MetricResult.from_samples("roofline_efficiency", [1.1] * 6).flags  # the median above 1
