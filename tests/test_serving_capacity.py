"""Capacity under an SLO: the limits and presets, the search and its interval's coverage (simulated),
the saturation stop, the client's self-check and its processes; end to end against fake servers of
known behaviour (one that saturates at a known concurrency, one that slows down), through the runner."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from llmbench.errors import UserError
from llmbench.results import load
from llmbench.serving.fake_server import FakeOptions, running
from llmbench.serving.load import Schedule, Session, Turn, arrival_offsets
from llmbench.serving.procs import shares
from llmbench.serving.search import PointOutcome, _mid, _resolved, client_late, search_capacity
from llmbench.serving.slo import SLO_PRESETS, check, parse_limits
from llmbench.serving.watch import WindowFigures, saturation
from tests.test_serving_cli import cli


def test_limits_parse_with_units_and_presets() -> None:
    slo = parse_limits("ttft_p99=500ms,tpot_p99=30ms e2e_p90=2s")
    assert [(lim.metric, lim.percentile, lim.limit_ms) for lim in slo.limits] == [
        ("ttft_ms", 99.0, 500.0), ("tpot_ms", 99.0, 30.0), ("e2e_ms", 90.0, 2000.0)]
    assert parse_limits("mlperf-llama3.1-8b-interactive").per_request() == {"ttft_ms": 500.0, "tpot_ms": 30.0}
    assert all(parse_limits(name).limits for name in SLO_PRESETS)
    for bad in ("ttft=500", "ttft_p100=5ms", "itl_p99=5ms", "ttft_p99=-5ms", ""):
        with pytest.raises(UserError, match=r"SLO|empty"):
            parse_limits(bad)


def test_a_failed_request_is_infinitely_late_and_misses_attainment() -> None:
    slo = parse_limits("ttft_p50=100ms")
    ok = check(slo, {"ttft_ms": [10.0, 20.0], "tpot_ms": [1.0, 1.0]}, failed=0)
    assert ok["met"] and ok["attainment"] == 1.0
    bad = check(slo, {"ttft_ms": [10.0, 20.0], "tpot_ms": [1.0, 1.0]}, failed=3)
    assert not bad["met"] and bad["attainment"] == pytest.approx(0.4)


def _known(capacity: float, noise: float = 0.0, seed: int = 0) -> object:
    """A server of known capacity as the search sees it: a load meets the SLO with probability
    Phi((capacity - load) / noise) (a step where noise is 0)."""
    rng = np.random.default_rng(seed)

    def measure(x: float, repeat: int, phase: str) -> PointOutcome:
        p = float(x <= capacity) if noise == 0 else 0.5 * math.erfc((x - capacity) / (noise * math.sqrt(2)))
        return PointOutcome(x, bool(rng.random() < p))

    return measure


def test_the_search_finds_a_step_capacity_exactly_and_says_where_it_is_a_bound() -> None:
    cap = search_capacity(_known(23), "concurrency", repeats=3, resolution=0.01)  # type: ignore[arg-type]
    assert cap.estimates == [23.0, 23.0, 23.0] and cap.bound is None
    assert [p["load"] for p in cap.points if p["phase"] == "coarse"] == [1, 2, 4, 8, 16, 32]
    assert search_capacity(_known(0.5), "concurrency").bound.startswith("no load met")  # type: ignore[arg-type,union-attr]
    top = search_capacity(_known(1e9), "rate", top=100)  # type: ignore[arg-type]
    assert top.bound is not None and top.estimates == [64.0]


def test_a_saturated_point_is_never_the_capacity() -> None:
    def measure(x: float, repeat: int, phase: str) -> PointOutcome:
        saturated = x > 10
        return PointOutcome(x, met=not saturated, saturated=saturated)  # the point check fails a saturated point

    cap = search_capacity(measure, "concurrency")
    assert cap.value == 10 and all(not p["met"] for p in cap.points if p["saturated"])


def test_a_client_flagged_near_the_boundary_flags_the_capacity() -> None:
    late = "the client used 98% of a core: it was short of CPU"

    def measure(x: float, repeat: int, phase: str) -> PointOutcome:  # late (and so missing) above 20 users
        return PointOutcome(x, met=x <= 20, facts={"client_flags": [late] if x > 20 else None})

    cap = search_capacity(measure, "concurrency", repeats=3)
    flag = client_late(cap.points)
    assert flag is not None and late in flag and "near the boundary" in flag and "--client-procs" in flag
    refine = [p for p in cap.points if p["phase"] == "refine"]
    assert f"of {len(refine) + 2} points" in flag  # the refinements and the coarse step's 16 (met) and 32 (missed)
    # flagged only where the client flagged itself near the boundary: a coarse point far below it is not
    quiet = search_capacity(lambda x, r, ph: PointOutcome(x, met=x <= 20, facts={
        "client_flags": [late] if x <= 2 else None}), "concurrency", repeats=3)
    assert any(p["client_flags"] for p in quiet.points if p["phase"] == "coarse")
    assert client_late(quiet.points) is None
    # a search that met nothing, its first point missed with the client late: the bound says it may be the client's
    none = search_capacity(lambda x, r, ph: PointOutcome(x, met=False, facts={"client_flags": [late]}), "concurrency")
    assert none.bound is not None and client_late(none.points) is not None


def test_the_interval_covers_about_what_its_label_says() -> None:
    """The order-statistic interval over the refinements covers the median of one refinement's estimate
    (conditional on the coarse bracket) with the coverage it is labelled with: 5 repeats, 93.75%."""
    capacity, noise, resolution, n = 37.0, 2.0, 0.05, 300
    rng, splits = np.random.default_rng(7), random.Random(11)
    medians: dict[tuple[float, float], float] = {}

    def one_refinement(lo: float, hi: float) -> float:
        a, b = lo, hi
        while not _resolved("rate", a, b, resolution):
            m = _mid("rate", a, b, splits.uniform(0.25, 0.75))
            p = 0.5 * math.erfc((m - capacity) / (noise * math.sqrt(2)))
            a, b = (m, b) if rng.random() < p else (a, m)
        return a

    covered, level = 0, 0.0
    for i in range(n):
        cap = search_capacity(_known(capacity, noise, seed=i), "rate", repeats=5, resolution=resolution,  # type: ignore[arg-type]
                              seed=i)
        coarse = [p for p in cap.points if p["phase"] == "coarse"]
        bracket = (max(p["load"] for p in coarse if p["met"]), min(p["load"] for p in coarse if not p["met"]))
        if bracket not in medians:
            medians[bracket] = float(np.median([one_refinement(*bracket) for _ in range(4000)]))
        ci = cap.interval()
        assert ci is not None
        level = ci["level"]
        covered += ci["lo"] <= medians[bracket] <= ci["hi"]
    assert level == pytest.approx(0.9375)
    assert abs(covered / n - level) < 0.045, covered / n  # binomial SE at n=300: 0.014


def test_saturation_is_a_queue_or_ttft_growing_window_after_window() -> None:
    def w(flight: float, ttft: float | None) -> WindowFigures:
        return WindowFigures(0.0, flight, ttft)

    steady = [w(8 + (i % 2), 50 + (i % 3)) for i in range(8)]
    assert saturation(steady, by_queue=True) is None
    queue = [w(4 * (i + 1), 50) for i in range(5)]
    assert "in flight grew" in (saturation(queue, by_queue=True) or "")
    assert saturation(queue, by_queue=False) is None  # a fixed concurrency cannot grow its in-flight count
    slower = [w(8, 40.0 * (i + 1)) for i in range(5)]
    assert "TTFT grew" in (saturation(slower, by_queue=False) or "")
    assert saturation([w(8, 1.0 + i * 0.1) for i in range(5)], by_queue=False) is None  # under the noise floor


def test_client_processes_share_the_schedule_whole() -> None:
    sessions = [Session((Turn(f"t {i}", 4),)) for i in range(10)]
    offsets = arrival_offsets(10, 5.0)
    parts = shares(sessions, Schedule(offsets_s=offsets), 3)
    assert sorted(o for _, s in parts for o in s.offsets_s or ()) == sorted(offsets)
    assert sum(len(s) for s, _ in parts) == 10
    slots = shares(sessions, Schedule(concurrency=5), 2)
    assert [s.concurrency for _, s in slots] == [3, 2] and sum(len(s) for s, _ in slots) == 10


def test_serve_bench_against_a_closed_port_says_so_before_loading_a_tokenizer(tmp_path: Path) -> None:
    """No --tokenizer: the default (the model name) would be looked up on a model hub; the closed port
    is named first, in one line."""
    r = cli("serve-bench", "--url", "http://127.0.0.1:9", "--model", "x", "--concurrency", "1", "--out",
            str(tmp_path / "out"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: cannot reach the server at http://127.0.0.1:9: connection refused (nothing listens there)"]
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def tok(tmp_path_factory: pytest.TempPathFactory) -> str:
    from llmbench.models.tokenizer import build_offline_tokenizer

    return str(build_offline_tokenizer(tmp_path_factory.mktemp("tok") / "tok", 512))


@pytest.mark.slow
def test_a_concurrency_search_finds_the_known_capacity_through_the_runner(tmp_path: Path, tok: str) -> None:
    """The server serves 6 requests at once; a 7th waits a whole request (at least 300 ms) for its first
    token, so ttft_p99 under 200 ms holds up to 6 and not above (margins of 100 ms and more either side
    for a busy machine)."""
    with running(FakeOptions(model="m", ttft_ms=2, itl_ms=60, capacity=6)) as url:
        r = cli("serve-bench", "--url", url, "--model", "m", "--tokenizer", tok, "--input-len", "8",
                "--output-len", "6", "-n", "24", "--slo", "ttft_p99=200ms", "--search", "concurrency",
                "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "search concurrency" in r.stdout and "capacity" in r.stdout
    rs = load(next((tmp_path / "out").glob("*/serve-bench-*.json")))
    (case,) = rs.cases
    m = case.metrics["capacity_concurrency"]
    assert m.value == 6 and m.samples == [6.0, 6.0, 6.0] and m.unit == "requests"
    assert m.stats is not None and m.stats.ci is not None and m.stats.ci.level == pytest.approx(0.75)
    points = case.info["capacity"]["points"]
    assert all(p["met"] == (p["load"] <= 6) for p in points), points
    assert [p["load"] for p in points if p["phase"] == "coarse"] == [1, 2, 4, 8]
    assert all(0 <= p["attainment"] <= 1 and "ttft_p99" in p["limits"] for p in points)
    assert case.info["capacity"]["metrics_at"] == 6 and "ttft_intended_ms" in case.metrics
    assert case.info["launcher"] == "local"  # the runner's case, in its own process


@pytest.mark.slow
def test_a_rate_above_what_the_server_keeps_up_with_ends_early_saturated(tok: str) -> None:
    """Two requests at once of about 50 ms: the server keeps up with about 40 req/s. At 200 req/s the
    queue grows from the start; the point ends long before its 2000 requests, marked saturated, and
    does not meet the SLO however lax."""
    from llmbench.serving.bench import run_point
    from llmbench.serving.client import Endpoint

    sessions = [Session((Turn(f"hello {i}", 6),)) for i in range(2000)]
    info: dict[str, object] = {}
    with running(FakeOptions(model="m", ttft_ms=2, itl_ms=8, capacity=2)) as url:
        run_point(Endpoint(url, "completions", "m"), sessions, Schedule(offsets_s=arrival_offsets(2000, 200.0)),
                  limits=parse_limits("ttft_p99=600s"), asked_rate=200.0, info=info, window_s=0.5)
    assert "in flight grew" in str(info["saturated"])
    assert info["requests_sent"] < 2000  # type: ignore[operator]
    assert info["slo_check"]["met"] is False and info["slo_check"]["saturated"]  # type: ignore[index]


@pytest.mark.slow
def test_a_server_slowing_down_is_saturated_at_a_fixed_concurrency() -> None:
    from llmbench.serving.bench import run_point
    from llmbench.serving.client import Endpoint

    sessions = [Session((Turn(f"hello {i}", 4),)) for i in range(3000)]
    info: dict[str, object] = {}
    with running(FakeOptions(model="m", ttft_ms=2, itl_ms=2, slowdown_ms=0.5)) as url:
        run_point(Endpoint(url, "completions", "m"), sessions, Schedule(concurrency=4), info=info, window_s=0.5,
                  limits=parse_limits("ttft_p99=600s"))
    assert "TTFT grew" in str(info["saturated"])
    assert info["requests_sent"] < 3000  # type: ignore[operator]


@pytest.mark.slow
def test_two_client_processes_drive_one_point_and_its_records_keep_littles_law() -> None:
    from llmbench.serving.bench import run_point
    from llmbench.serving.client import Endpoint

    sessions = [Session((Turn(f"hello {i}", 8),)) for i in range(120)]
    info: dict[str, object] = {}
    with running(FakeOptions(model="m", ttft_ms=5, itl_ms=5)) as url:
        metrics = run_point(Endpoint(url, "completions", "m"), sessions, Schedule(concurrency=6), info=info,
                            client_processes=2)
    check = info["client_check"]
    assert check["processes"] == 2  # type: ignore[index]
    assert info["requests_ok"] == 120 and info["peak_in_flight"] == 6
    law = check["littles_law"]  # type: ignore[index]
    assert law["ratio"] == pytest.approx(1.0, abs=0.1)
    assert "ttft_intended_ms" in metrics and "client_cpu_share" in metrics
