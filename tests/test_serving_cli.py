"""The serving scenario through `llmbench run`, and `llmbench serve-bench`, end to end on the CPU
against the fake SSE server (a real HTTP server, not a model)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.results import load
from llmbench.serving.fake_server import FakeOptions, running
from llmbench.serving.records import from_columns
from tests.conftest import ROOT, write


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`python -m llmbench` of this checkout, from any folder."""
    env = {**os.environ, "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "llmbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=env)

SUITE = """
name = "serving-e2e"
[defaults]
timeout_s = 120
preset = "tiny-llama"
input_len = 24
output_len = 6
num_requests = 12

[[case]]
scenario = "serving"
server = ["{python}", "-m", "llmbench.serving.fake_server", "--port", "{port}", "--model", "{model}"]
matrix.concurrency = [1, 4]
slo = "ttft:10000 tpot:10000"

[[case]]
scenario = "serving"
server = ["{python}", "-c", "print('cannot load the model', flush=True); raise SystemExit(3)"]
concurrency = 1

[[case]]
scenario = "serving"
url = "http://127.0.0.1:9"
rate = 5
"""


@pytest.mark.slow
def test_the_serving_scenario_end_to_end(tmp_path: Path) -> None:
    suite = write(tmp_path, SUITE)
    r = cli("run", str(suite), "--out", str(tmp_path / "out"), "--cpu", cwd=tmp_path)
    assert r.returncode == 1, r.stderr  # two cases fail on purpose (a dead server, an unreachable URL)
    assert "2 failed" in r.stderr
    rs = load(next((tmp_path / "out").glob("*/serving-e2e-*.json")))
    ok = [c for c in rs.cases if c.status == "ok"]
    assert sorted(c.params["concurrency"] for c in ok) == [1, 4]
    for c in ok:
        assert c.metrics["failed_requests"].value == 0
        assert c.metrics["ttft_ms"].stats.n == 12
        assert c.metrics["goodput_per_s"].value == pytest.approx(c.metrics["request_throughput_per_s"].value)
        records = from_columns(c.info["requests"])
        assert [r.output_tokens for r in records] == [6] * 12
        assert c.info["seed"] == 0 and c.info["server_exit_code"] is not None
        assert (tmp_path / c.info["server_log"]).is_file()
    four = next(c for c in ok if c.params["concurrency"] == 4)
    assert four.info["peak_in_flight"] == 4
    dead = next(c for c in rs.cases if c.params.get("server") and c.params["server"][1] == "-c")
    assert dead.status == "failed"
    assert "exited with code 3" in dead.reason and "cannot load the model" in dead.reason
    assert "cannot load the model" in "\n".join(dead.info["server_log_tail"])
    gone = next(c for c in rs.cases if c.params.get("url"))
    assert gone.status == "failed"
    assert gone.reason.endswith("cannot reach the server at http://127.0.0.1:9: connection refused (nothing listens "
                                "there)")


@pytest.mark.parametrize("args,needle", [
    (["--rate", "1", "--concurrency", "2"], "not both"),
    (["--rate", "-1"], "must be > 0"),
    (["--concurrency", "0"], "must be > 0"),
    (["--rate", "1", "--goodput", "ttft=500"], "SLO 'ttft=500'"),
    (["--rate", "1", "--endpoint", "embeddings"], "endpoint"),
    ([], "give --rate"),
])
def test_serve_bench_bad_input_exits_2(tmp_path: Path, args: list[str], needle: str) -> None:
    r = cli("serve-bench", "--url", "http://127.0.0.1:9", "--model", "m", "--tokenizer", "x", *args,
            "--out", str(tmp_path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert needle in r.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_serve_bench_sweeps_a_running_server_and_compare_reads_it(tmp_path: Path) -> None:
    from llmbench.models.tokenizer import build_offline_tokenizer

    tok = build_offline_tokenizer(tmp_path / "tok", 512)
    with running(FakeOptions(model="tiny", itl_ms=1)) as url:
        r = cli("serve-bench", "--url", url, "--model", "tiny", "--tokenizer", str(tok), "--concurrency", "1,3",
                "--input-len", "16", "--output-len", "4", "-n", "9", "--goodput", "ttft:10000", "--out",
                str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert "concurrency 1" in r.stdout and "concurrency 3" in r.stdout and "TTFT p50 ms" in r.stdout
    path = next((tmp_path / "out").glob("*/serve-bench-*.json"))
    rs = load(path)
    assert [c.status for c in rs.cases] == ["ok", "ok"]
    assert all(c.metrics["output_tokens_per_s"].value > 0 for c in rs.cases)
    shown = cli("compare", str(path), "--base", "concurrency=1")
    assert shown.returncode == 0, shown.stderr


@pytest.mark.slow
def test_serve_bench_counts_a_server_error_of_a_later_points_test_request(tmp_path: Path) -> None:
    """Point 1 sends 4 requests (its test request and 3), so the server's 5th request is point 2's test
    request: an HTTP 500 there is a failed request of point 2, and the sweep ends normally (exit 0)."""
    from llmbench.models.tokenizer import build_offline_tokenizer

    tok = build_offline_tokenizer(tmp_path / "tok", 512)
    with running(FakeOptions(model="tiny", http_status=500, fail_every=5)) as url:
        r = cli("serve-bench", "--url", url, "--model", "tiny", "--tokenizer", str(tok), "--concurrency", "1,2",
                "--input-len", "8", "--output-len", "3", "-n", "3", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    rs = load(next((tmp_path / "out").glob("*/serve-bench-*.json")))
    assert [c.status for c in rs.cases] == ["ok", "ok"]
    assert [c.metrics["failed_requests"].value for c in rs.cases] == [0, 1]
    assert rs.cases[1].info["first_errors"][0].startswith("test request: HTTP 500")


@pytest.mark.slow
def test_serve_bench_against_nothing_is_bad_input_and_writes_nothing(tmp_path: Path) -> None:
    from llmbench.models.tokenizer import build_offline_tokenizer

    tok = build_offline_tokenizer(tmp_path / "tok", 512)
    with running() as url:
        pass  # the port is free again: nothing listens there
    r = cli("serve-bench", "--url", url, "--model", "m", "--tokenizer", str(tok), "--rate", "1",
            "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().endswith("connection refused (nothing listens there)")
    assert not (tmp_path / "out").exists()


def test_serve_bench_is_in_the_help() -> None:
    r = cli("serve-bench", "--help")
    assert r.returncode == 0 and "--concurrency" in r.stdout and "--goodput" in r.stdout


SHARED_SUITE = """
name = "serving-shared"
[defaults]
timeout_s = 120
preset = "tiny-llama"
input_len = 16
output_len = 4
num_requests = 6
server_scope = "suite"

[[case]]
scenario = "serving"
server = ["{python}", "-m", "llmbench.serving.fake_server", "--port", "{port}", "--model", "{model}"]
matrix.concurrency = [1, 2, 4]
"""


@pytest.mark.slow
def test_a_suite_scoped_server_is_started_once_reused_and_stopped_at_the_end(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    suite = write(tmp_path, SHARED_SUITE)
    r = cli("run", str(suite), "--out", str(tmp_path / "out"), "--cpu", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rs = load(next((tmp_path / "out").glob("*/serving-shared-*.json")))
    assert [c.status for c in rs.cases] == ["ok"] * 3
    assert [c.info["server_reused"] for c in rs.cases] == [False, True, True]
    assert len({c.info["url"] for c in rs.cases}) == 1 and len({c.info["server_log"] for c in rs.cases}) == 1
    assert "server_ready_s" in rs.cases[0].info
    assert all(c.metrics["failed_requests"].value == 0 for c in rs.cases)
    with pytest.raises((urllib.error.URLError, OSError)):  # the runner stopped it when the suite ended
        urllib.request.urlopen(rs.cases[0].info["url"] + "/health", timeout=2)
    assert "server_scope" in rs.cases[0].params  # a non-default added param is part of the id


@pytest.mark.slow
def test_under_parallel_each_serving_case_starts_and_stops_its_own_server(tmp_path: Path) -> None:
    """--parallel gives case processes no shared-server folder: a server kept on one slot would hold
    its GPUs while other cases run there. Each case has its own server, stopped by that case; the run
    says so."""
    suite = write(tmp_path, SHARED_SUITE)
    r = cli("run", str(suite), "--out", str(tmp_path / "out"), "--cpu", "--gpus", "0,1", "--parallel", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert 'server_scope = "suite" is not used' in " ".join((r.stdout + r.stderr).split())
    rs = load(next((tmp_path / "out").glob("*/serving-shared-*.json")))
    assert [c.status for c in rs.cases] == ["ok"] * 3
    assert all("server_reused" not in c.info and "server_exit_code" in c.info for c in rs.cases)
    assert len({c.info["url"] for c in rs.cases}) == 3 and len({c.info["server_log"] for c in rs.cases}) == 3
    assert {c.info["gpus"] for c in rs.cases} <= {"0", "1"}
