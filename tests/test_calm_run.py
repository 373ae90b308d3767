"""A calm first run: cases that cannot run here are skipped by the runner without a process, many
alike flags print as one line, and no temporary folder of a killed run is left behind."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llmbench.hardware.fingerprint import cpu_native_matmul
from llmbench.harness import runner
from llmbench.harness.isolation import sweep_stale_tmp
from llmbench.harness.launchers.local import IsolatedProcess
from llmbench.harness.runner import RunOptions, parent_device, run_suite
from llmbench.report.terminal import flag_summary, flags_of
from llmbench.results import CaseResult, MetricResult, ResultSet, load
from llmbench.suite import filter_cases, load_suite
from tests.test_cli import cli

A100 = {"gpu": {"name": "NVIDIA A100-SXM4-80GB", "slug": "a100-sxm-80gb", "count": 1, "compute_capability": "8.0",
                "memory_gib": 79.2}, "cpu": {"model": "test CPU"}}
CPU = {"gpu": {"name": "none (CPU)", "slug": "cpu-x86_64", "count": 0}, "cpu": {"model": "test CPU"}}


class _NoProcess(IsolatedProcess):
    def run(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a case process was started for a case the runner can skip")


@pytest.mark.parametrize(("fp", "device", "filters"), [
    (CPU, "cpu", ["kind=d2d,h2d,d2h"]),
    (A100, "auto", ["precision=fp8"]),  # compute capability 8.0 < 8.9, read from the fingerprint
    (A100, "cpu", ["kind=d2d,h2d"]),  # --cpu on a GPU machine
], ids=["cpu", "a100-fp8", "forced-cpu"])
def test_cases_that_cannot_run_here_are_skipped_without_a_process(
    fp: dict[str, Any], device: str, filters: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_NoProcess, "fingerprint", lambda self, env: {k: dict(v) for k, v in fp.items()})
    monkeypatch.setattr(runner, "foreign_gpu_processes", lambda gpus, ours=(): [])
    suite = load_suite("quickstart")
    cases = filter_cases(suite.cases, filters)
    rs = load(run_suite(suite, cases, RunOptions(out_dir=tmp_path, device=device, launcher=_NoProcess())))
    assert [c.status for c in rs.cases] == ["skipped"] * len(cases)
    assert all(c.reason and c.info["skipped_by"] == "runner" for c in rs.cases)


def test_the_parent_device_comes_from_the_fingerprint() -> None:
    d = parent_device(A100, "auto")
    assert (d.kind, d.cc, d.memory_gib) == ("cuda", (8, 0), 79.2)
    assert parent_device(A100, "cpu").kind == "cpu"
    assert parent_device(CPU, "auto").name == "CPU test CPU"


def _case(i: int) -> CaseResult:
    energy = [f"energy window 0.{i % 9 + 1}0s is under 1s: the NVML counter updates about every 100 ms, so this "
              "reading is not trusted"]
    drift = [f"drifted +{i + 5}% from the first to the last tenth of the timed window"]
    metrics = {"energy_j": MetricResult(value=1.0, unit="J", flags=energy),
               "avg_power_w": MetricResult(value=1.0, unit="W", flags=energy),
               "tflops": MetricResult(value=1.0, unit="TFLOP/s", flags=drift)}
    return CaseResult(id=f"gemm/{i:012d}", scenario="gemm", params={"i": i}, status="ok", metrics=metrics)


def test_alike_flags_collapse_into_one_line_each_with_their_count() -> None:
    rs = ResultSet(suite="s", cases=[_case(i) for i in range(14)])
    assert len(flags_of(rs)) == 42  # the result set keeps every flag
    lines = flag_summary(rs)
    assert len(lines) == 2, lines
    energy = next(x for x in lines if x.startswith("energy"))
    assert "0.10..0.90s is under 1s" in energy and "on 14 case(s) (energy_j, avg_power_w)" in energy
    drift = next(x for x in lines if x.startswith("drifted"))
    assert "+5..+18%" in drift and "on 14 case(s) (tflops)" in drift
    assert flag_summary(rs, every=True) == flags_of(rs)


def test_many_kinds_of_flag_stop_at_a_few_lines() -> None:
    cases = [CaseResult(id=f"g/{i}", scenario="gemm", params={}, status="ok",
                        metrics={"tflops": MetricResult(value=1.0, unit="TFLOP/s", flags=[f"kind {'x' * i} odd"])})
             for i in range(1, 10)]
    lines = flag_summary(ResultSet(suite="s", cases=cases), max_lines=4)
    assert len(lines) == 5 and lines[-1].startswith("5 more flag(s) of 5 other kind(s)")


def test_temporary_folders_of_dead_runners_are_swept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    import os

    stale = tmp_path / f"llmbench-case-{dead_pid}-abc"
    live = tmp_path / f"llmbench-case-{os.getpid()}-abc"
    foreign = tmp_path / "llmbench-case-abcdefgh"  # an older llmbench's, or another tool's: not ours to judge
    for d in (stale, live, foreign):
        d.mkdir()
    assert sweep_stale_tmp(str(tmp_path)) == 1
    assert not stale.exists() and live.exists() and foreign.exists()


@pytest.mark.slow
def test_the_cpu_quickstart_prints_few_warning_lines_and_keeps_every_flag(tmp_path: Path) -> None:
    r = cli("run", "quickstart", "--cpu", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    rs = load(next(tmp_path.glob("cpu-*/quickstart-*.json")))
    warning_lines = [x for x in r.stdout.splitlines() if x.startswith("warning:")]
    assert len(warning_lines) <= 5
    assert len(warning_lines) <= len(rs.warnings) + len(flags_of(rs))
    # 9 cannot run on a CPU; the two bf16 products are skipped too where this CPU emulates bf16
    assert sum(c.status == "skipped" for c in rs.cases) == 9 + 2 * (not cpu_native_matmul("bf16"))
    assert all(c.info.get("skipped_by") == "runner" for c in rs.cases if c.status == "skipped")
    assert not re.search(r"Traceback", r.stdout + r.stderr)


def test_large_half_precision_products_are_skipped_where_the_cpu_emulates_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmbench.hardware import fingerprint
    from llmbench.scenarios import gemm

    monkeypatch.setattr(fingerprint, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    reason = gemm.emulated_reason("bf16", (4096, 4096, 4096))
    assert reason is not None and "emulated" in reason and "4096x4096x4096" in reason
    assert gemm.emulated_reason("bf16", (1024, 1024, 1024)) is not None
    assert gemm.emulated_reason("bf16", (256, 256, 256)) is None  # small enough to run at once (tests)
    monkeypatch.setattr(fingerprint, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    assert gemm.emulated_reason("bf16", (4096, 4096, 4096)) is None
    assert gemm.emulated_reason("fp16", (4096, 4096, 4096)) is not None  # bf16 instructions are no fp16 ones
    monkeypatch.setattr(fingerprint, "cpu_flags", lambda: None)  # unreadable: run it
    assert gemm.emulated_reason("fp16", (4096, 4096, 4096)) is None
