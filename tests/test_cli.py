"""The command line end to end on the CPU: quickstart, dry runs, errors with exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.hardware.fingerprint import cpu_native_matmul
from llmbench.results import load
from tests.conftest import ROOT, write


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llmbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**__import__("os").environ, "COLUMNS": "200"})


@pytest.mark.slow
def test_quickstart_runs_on_the_cpu_and_show_reads_it(tmp_path: Path) -> None:
    r = cli("run", "quickstart", "--out", str(tmp_path), "--cpu", "--filter", "shape=1024x1024x1024",
            "--filter", "precision=fp32,bf16,fp8")
    assert r.returncode == 0, r.stderr
    files = list(tmp_path.glob("cpu-*/quickstart-*.json"))
    assert len(files) == 1
    rs = load(files[0])
    status = {c.params["precision"]: c.status for c in rs.cases}
    # bf16 runs where the CPU has bf16 instructions; where it emulates them the product is skipped
    assert status == {"fp32": "ok", "bf16": "ok" if cpu_native_matmul("bf16") else "skipped", "fp8": "skipped"}
    fp8 = next(c for c in rs.cases if c.params["precision"] == "fp8")
    assert "fp8 needs compute capability >= 8.9" in fp8.reason
    ok = next(c for c in rs.cases if c.params["precision"] == "fp32")
    assert ok.metrics["tflops"].value > 0
    assert ok.metrics["rel_error_vs_fp32"].value < 1e-5
    assert ok.info["calls_per_sample"] >= 1
    shown = cli("show", str(files[0]))
    assert shown.returncode == 0
    assert "tflops" in shown.stdout and "skipped" in shown.stdout


@pytest.mark.slow
def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path: Path) -> None:
    r = cli("run", "ceilings", "--dry-run", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stdout.split())  # a long --out path moves where the lines break
    assert "39 case(s)" in said and "nothing was run" in said
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_dry_run_quotes_what_an_earlier_run_on_this_machine_measured(tmp_path: Path) -> None:
    from llmbench.analysis.labels import gpu_display_name
    from llmbench.hardware.fingerprint import cpu_slug
    from llmbench.results import CaseResult, ResultSet, save
    from llmbench.suite import load_suite

    cases = load_suite("ceilings").cases
    slug = cpu_slug()
    done = [CaseResult(id=c.id, scenario=c.scenario, params=c.params_dict, status="ok", duration_s=600.0)
            for c in cases[:2]]
    failed = CaseResult(id=cases[2].id, scenario=cases[2].scenario, params=cases[2].params_dict,
                        status="failed", duration_s=9999.0)
    path = tmp_path / slug / "ceilings-20261122T000000Z.json"
    save(ResultSet(suite="ceilings", env={"gpu": {"slug": slug}}, cases=[*done, failed]), path)
    before = path.read_text()
    r = cli("run", "ceilings", "--dry-run", "--cpu", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    here = gpu_display_name(slug)
    assert r.stdout.count(f"measured, {here}") == 2
    assert "9999" not in r.stdout  # a failed case's time is no guide
    similar = r.stdout.count(f"similar, {here}")  # cases sharing params with a measured one of the same scenario
    skipped = r.stdout.count("skipped  ")  # what a CPU cannot run costs nothing
    assert 0 < similar < 37 and skipped > 0
    assert f"2 measured on {here}; {similar} like similar cases measured there" in " ".join(r.stdout.split())
    assert f"{37 - similar - skipped} estimated; {skipped} skipped here (no time)" in " ".join(r.stdout.split())
    assert path.read_text() == before and len(list(tmp_path.rglob("*.json"))) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "nosuch"], "unknown suite 'nosuch'"),
        (["run", "quickstart", "--filter", "precision=int3"], "valid precision values: bf16, fp32, fp8, tf32"),
        (["run", "quickstart", "--filter", "precison=bf16"], "unknown key 'precison'"),
        (["show", "missing.json"], "does not exist"),
        (["list", "gpus"], "unknown list 'gpus'"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(tmp_path: Path, args: list[str], needle: str) -> None:
    r = cli(*args, cwd=ROOT)
    assert r.returncode == 2
    assert needle in r.stderr


@pytest.mark.slow
def test_bad_suite_file_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    bad = write(tmp_path, '[[case]]\nscenario = "gemm"\nprecision = "int3"\n')
    r = cli("run", str(bad), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "precision" in r.stderr and "'int3'" in r.stderr and "fp32, tf32, fp16, bf16, fp8" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_very_large_plan_is_refused_without_yes(tmp_path: Path) -> None:
    shapes = ", ".join(f"[{i}, 16, 16]" for i in range(1, 302))
    big = write(tmp_path, f'[[case]]\nscenario = "gemm"\nmatrix.shape = [{shapes}]\n')
    r = cli("run", str(big), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "301 cases" in r.stderr and "--yes" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_list_and_help() -> None:
    r = cli("list")
    assert r.returncode == 0
    for word in ("quickstart", "gemm", "bandwidth", "nf4", "hf"):
        assert word in r.stdout
    assert "Run a suite" in cli("--help").stdout
    assert "--resume" in cli("run", "--help").stdout
