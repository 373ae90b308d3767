"""A case run as copies side by side (placement.replicas): each copy a case process of its own on its
slice of the GPUs, their timed windows started together, throughputs summed sample by sample, latencies
pooled, anything else the worst copy's; a copy that fails fails the case naming it, and the others stop
waiting. On the CPU, through the same worker and launcher as on a GPU."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from llmbench.errors import SuiteError
from llmbench.harness.launchers.replicas import combine, overlap, replica_spec
from llmbench.harness.worker import run_case
from llmbench.measure.timing import StopRule
from llmbench.placement import Placement
from llmbench.precision import DeviceInfo
from llmbench.results import MetricResult
from llmbench.scenarios.base import CaseContext
from llmbench.suite import case_from, parse_suite

SETTINGS = {"warmup_iters": 1, "min_iters": 3, "min_seconds": 0.0}


def payload(window: list[float], **metrics: list[float]) -> dict[str, Any]:
    return {"info": {"windows_unix": [window], "build_s": 1.0}, "code_path": {"engine": "x"},
            "metrics": {k: MetricResult.from_samples(k, v).model_dump() for k, v in metrics.items()}}


def test_throughputs_add_sample_by_sample_latencies_pool_and_the_rest_is_the_worst_copy() -> None:
    ctx = CaseContext(DeviceInfo("cpu", "CPU"), StopRule(), emit_progress=False)
    combine([payload([0.0, 10.0], decode_tokens_per_s=[100, 110, 120], tpot_ms=[10, 11, 12], compile_s=[2.0]),
             payload([0.5, 10.0], decode_tokens_per_s=[50, 60], tpot_ms=[20, 21], compile_s=[5.0])], ctx)
    m = ctx.metrics
    assert m["decode_tokens_per_s"].samples == [150, 170]  # the i-th iteration of each, to the shorter
    assert sorted(m["tpot_ms"].samples or []) == [10, 11, 12, 20, 21]
    assert m["compile_s"].value == 5.0  # lower is better: the worst is the largest
    r = ctx.info["replicas"]
    assert r["count"] == 2 and r["overlap"] == pytest.approx(0.95) and r["metrics"]["compile_s"] == [2.0, 5.0]
    assert ctx.info["build_s"] == 1.0 and "window_unix" not in ctx.info
    assert ctx.code_path["same_on_every_replica"] is True
    assert not m["decode_tokens_per_s"].flags


def test_a_sum_of_windows_that_barely_overlapped_is_flagged() -> None:
    ctx = CaseContext(DeviceInfo("cpu", "CPU"), StopRule(), emit_progress=False)
    combine([payload([0.0, 10.0], output_tokens_per_s=[1, 1]), payload([8.0, 18.0], output_tokens_per_s=[1, 1])], ctx)
    assert overlap([[0.0, 10.0], [8.0, 18.0]]) == pytest.approx(2 / 18)
    assert any("open together for 11%" in f for f in ctx.metrics["output_tokens_per_s"].flags)


def test_each_replica_gets_its_share_of_the_gpus_and_the_start_line() -> None:
    spec = {"scenario": "generate", "placement": {"gpus": 4, "replicas": 2, "nodes": 1}, "params": {}}
    one = replica_spec(spec, 1, 2, Path("/tmp/x"))
    assert one["placement"] == {"gpus": 2, "replicas": 1, "nodes": 1}
    assert one["replica"] == {"index": 1, "of": 2, "folder": "/tmp/x"} and spec["placement"]["replicas"] == 2


def test_placement_and_suite_rules_for_replicas() -> None:
    with pytest.raises(ValueError, match="does not split evenly over replicas"):
        Placement(gpus=3, replicas=2)
    with pytest.raises(ValueError, match="replicas and nodes together"):
        Placement(gpus=4, replicas=2, nodes=2)
    with pytest.raises(SuiteError, match=r"does not run as replicas.*generate"):
        parse_suite({"name": "s", "case": [{"scenario": "gemm", "placement": {"gpus": 2, "replicas": 2}}]}, "s.toml")
    vllm = {"model": "tiny-llama", "engine": {"name": "vllm"}}
    tp2 = case_from("generate", {**vllm, "placement": {"gpus": 2}})
    two = case_from("generate", {**vllm, "placement": {"gpus": 2, "replicas": 2}})
    one = case_from("generate", vllm)
    assert tp2.engine.tensor_parallel == 2 and two.engine.tensor_parallel == 1  # type: ignore[union-attr]
    assert two.placement.gpus == 2 and len({one.id, tp2.id, two.id}) == 3
    assert case_from("generate", {**vllm, "engine": {"name": "vllm", "tensor_parallel": 2},
                                  "placement": {"replicas": 2}}).placement.gpus == 4
    with pytest.raises(SuiteError, match=r"gpus = 3 does not split evenly over 2 copies"):
        case_from("generate", {**vllm, "placement": {"gpus": 3, "replicas": 2}})
    with pytest.raises(SuiteError, match=r"tensor_parallel = 2 but placement gpus = 2 / 2 copies"):
        case_from("generate", {**vllm, "engine": {"name": "vllm", "tensor_parallel": 2},
                               "placement": {"gpus": 2, "replicas": 2}})


@pytest.mark.slow
def test_generate_as_two_replicas_runs_both_copies_and_sums_their_throughput() -> None:
    spec = case_from("generate", {"model": "tiny-llama", "batch_size": 2, "input_len": 6, "output_len": 4,
                                  "placement": {"gpus": 2, "replicas": 2}}, SETTINGS).worker_spec("cpu")
    r = run_case(spec)
    assert r["status"] == "ok", (r.get("reason"), r.get("traceback"))
    info, m = r["info"], r["metrics"]
    assert info["launcher"] == "replicas" and info["replicas"]["count"] == 2
    per = info["replicas"]["metrics"]["decode_tokens_per_s"]
    # each copy's own figure is kept; the node's is their sum sample by sample (the arithmetic: the first
    # test), whose median need not be the sum of medians when a loaded host slows one copy's iterations
    assert len(per) == 2 and min(per) > 0 and m["decode_tokens_per_s"]["value"] > 0
    assert len(m["tpot_ms"]["samples"]) >= 2 * SETTINGS["min_iters"]  # both copies' iterations, pooled
    ready, start = zip(*((w[0], w[1]) for w in info["replicas"]["windows_unix"]), strict=True)
    # no copy opened its timed window before every copy was ready (the set writes times to the millisecond)
    assert min(start) >= max(ready) - 1e-3
    assert 0.0 <= info["replicas"]["overlap"] <= 1.0
    assert r["code_path"]["same_on_every_replica"] is True


@pytest.mark.slow
def test_a_replica_that_fails_fails_the_case_naming_it_and_the_other_stops_waiting(
        fault_plugin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMBENCH_TEST_PID_DIR", str(tmp_path))
    spec = case_from("fault_replicas", {"fail_replica": 1, "placement": {"gpus": 2, "replicas": 2}},
                     {**SETTINGS, "timeout_s": 300}).worker_spec("cpu")
    t0 = time.monotonic()
    r = run_case(spec)
    assert r["status"] == "failed" and r["reason"].startswith("replica 2 of 2: RuntimeError: planted failure")
    took = time.monotonic() - t0
    assert took < 200, f"the case took {took:.1f} s: replica 1 waited for its 300 s timeout"
    assert len(list(tmp_path.glob("*.replica"))) == 2


@pytest.mark.slow
def test_replicas_that_both_run_combine_through_the_runner(fault_plugin: str, tmp_path: Path) -> None:
    from llmbench.api import run_suite  # the whole path: suite file, runner, result set

    suite = tmp_path / "r.toml"
    suite.write_text('name = "r"\n[defaults]\nwarmup_iters = 1\nmin_iters = 3\nmin_seconds = 0.0\n'
                     '[[case]]\nscenario = "fault_replicas"\nplacement = {gpus = 2, replicas = 2}\n')
    res = run_suite(str(suite), out=tmp_path / "out", cpu=True)
    (case,) = res.passes[0].result_set.cases
    assert case.status == "ok", case.reason
    assert case.info["launcher"] == "replicas" and case.params["placement"] == {"gpus": 2, "replicas": 2}
    assert case.placement is not None and (case.placement.gpus, case.placement.replicas) == (2, 2)
    assert case.metrics["compile_s"].value == 1.5  # the worse copy's
    assert len(case.metrics["time_ms"].samples or []) >= 6
