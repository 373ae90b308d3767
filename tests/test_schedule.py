"""Scheduling over GPU slots (harness/schedule.py): under --parallel a share group runs in one process
on one slot while other units use the others; a host-exclusive case runs with nothing beside it; the
quote's timeline is the runner's; oneshot goes side by side over every GPU of a node by default. Two
fake GPUs on the CPU, as tests/test_parallel.py."""

from __future__ import annotations

import itertools
import os
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from llmbench.api.run import Plan
from llmbench.api.session import Journal
from llmbench.hardware.cpus import cpu_list, cpu_shares
from llmbench.harness.isolation import ChildOutcome
from llmbench.harness.launch import node_placement
from llmbench.harness.launchers.local import IsolatedProcess
from llmbench.harness.plan import MeasuredCase
from llmbench.harness.runner import RunOptions, run_suite
from llmbench.harness.schedule import SUITE_SAYS, alone_reason, run_schedule
from llmbench.harness.ui import UI
from llmbench.precision import DeviceInfo
from llmbench.results import CaseResult, load
from llmbench.suite import Suite, load_suite
from tests.conftest import write

CPU = DeviceInfo("cpu", "CPU test")


def _spans_overlap(a: CaseResult, b: CaseResult) -> bool:
    return a.info["start"] < b.info["end"] and b.info["start"] < a.info["end"]


@pytest.mark.slow
def test_a_share_group_runs_in_one_process_on_one_slot_beside_another_unit(tmp_path: Path, fault_plugin: str) -> None:
    suite = load_suite(str(write(tmp_path, """
name = "shared-parallel"
share_engines = true
[defaults]
min_iters = 1
min_seconds = 0.0
warmup_iters = 0
timeout_s = 120
[[case]]
scenario = "shared"
share = "a"
matrix.tag = [0, 1, 2]
seconds = 1.0
[[case]]
scenario = "shared"
share = ""
tag = 3
seconds = 3.0
""")))
    opts = RunOptions(out_dir=tmp_path / "out", device="cpu", gpus="0,1", parallel=True)
    rs = load(run_suite(suite, suite.cases, opts))
    by_tag = {c.params["tag"]: c for c in rs.cases}
    assert all(c.status == "ok" for c in rs.cases), [c.reason for c in rs.cases]
    group, other = [by_tag[t] for t in (0, 1, 2)], by_tag[3]
    assert len({c.info["pid"] for c in group}) == 1 and other.info["pid"] != group[0].info["pid"]
    assert {c.info["gpus"] for c in group} == {"0"} and other.info["gpus"] == "1"  # the group held one slot
    assert [c.info["share_group"]["ran"] for c in group] == ["in group"] * 3
    assert group[2].info["session_of"] == group[0].id
    assert any(_spans_overlap(c, other) for c in group)  # the other unit ran on the other slot meanwhile
    assert all(c.info["ran_beside_cases"] for c in rs.cases)


@pytest.mark.slow
def test_a_host_exclusive_case_never_overlaps_another(tmp_path: Path, fault_plugin: str) -> None:
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    suite = load_suite(str(write(tmp_path, """
name = "alone"
[defaults]
min_iters = 1
min_seconds = 0.0
timeout_s = 120
[[case]]
scenario = "probe"
matrix.tag = [1, 2]
wait_for = 2
[[case]]
scenario = "probe"
tag = 3
loads_host = true
[[case]]
scenario = "probe"
matrix.tag = [4, 5]
[[case]]
scenario = "probe"
tag = 6
loads_host = true
placement = {exclusive = false}
""")))
    opts = RunOptions(out_dir=tmp_path / "out", device="cpu", gpus="0,1", parallel=True,
                      extra_env={"LLMBENCH_TEST_PROBE_DIR": str(probe_dir)})
    rs = load(run_suite(suite, suite.cases, opts))
    by_tag = {c.params["tag"]: c for c in rs.cases}
    assert all(c.status == "ok" for c in rs.cases), [c.reason for c in rs.cases]
    alone = by_tag[3]
    assert not any(_spans_overlap(alone, c) for c in rs.cases if c is not alone)
    assert alone.info["ran_alone"] == "planted: it loads the host" and "ran_beside_cases" not in alone.info
    assert by_tag[1].info["peers_seen"] >= 2  # the others did run side by side
    assert "ran_alone" not in by_tag[6].info and by_tag[6].info["ran_beside_cases"]  # the suite said no
    # beside others, a case process is bound to its slot's share of the cores; alone, it keeps them all
    host = sorted(os.sched_getaffinity(0))
    shares = dict(zip(("0", "1"), cpu_shares(2), strict=True))
    for tag in (1, 2, 4, 5, 6):
        case = by_tag[tag]
        assert case.info["affinity"] == sorted(shares[case.info["visible"]]), case.info
        assert case.info["cpus"] == cpu_list(shares[case.info["visible"]])
    assert alone.info["affinity"] == host and "cpus" not in alone.info
    for case in rs.cases:  # each timed window recorded, inside its case's run
        ((w0, w1),) = case.info["windows_unix"]
        assert case.info["start"] <= w0 <= w1 <= case.info["end"], case.info


def test_where_a_case_must_run_alone_is_its_scenarios_word_unless_its_suite_says(fault_plugin: str) -> None:
    from llmbench.suite import case_from

    assert alone_reason(case_from("bandwidth", {"kind": "h2d"})) == "a h2d copy loads PCIe and host memory"
    assert alone_reason(case_from("bandwidth", {"kind": "d2d"})) is None
    assert alone_reason(case_from("host_bound", {})) is not None
    # a compiling case shares the host (on cores of its own); an eager in-process decode is the host's speed
    compiled = case_from("generate", {"model": "tiny-llama", "engine": {"name": "hf", "mode": "compiled"}})
    assert alone_reason(compiled) is None
    eager = case_from("generate", {"model": "tiny-llama", "engine": {"name": "hf"}})
    assert "eager" in (alone_reason(eager) or "")
    assert alone_reason(case_from("generate", {"model": "tiny-llama", "engine": {"name": "vllm"}})) is None
    served = {"preset": "tiny-llama", "concurrency": 1}
    assert alone_reason(case_from("serving", {"engine": {"name": "vllm"}, **served})) is None
    assert alone_reason(case_from("gemm", {"placement": {"exclusive": True}})) == SUITE_SAYS
    assert alone_reason(case_from("host_bound", {"placement": {"exclusive": False}})) is None


class SleepLauncher:
    """Runs a `shared` case in this process: it sleeps its `seconds` and notes when (no process start,
    so a case lasts what its quote says and the run's timeline can be set against the quote's)."""

    name = "local"

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def _sleep(self, spec: dict[str, Any]) -> ChildOutcome:
        start = time.time()
        time.sleep(spec["params"]["seconds"])
        return ChildOutcome("ok", payload={"info": {"start": start, "end": time.time()}},
                            duration_s=time.time() - start)

    def run(self, spec: dict[str, Any], env: dict[str, str], timeout_s: float, on_progress: Any = None) -> ChildOutcome:
        return self._sleep(spec)

    def fingerprint(self, env: dict[str, str]) -> dict[str, Any]:
        return IsolatedProcess().fingerprint(env)  # the set's env, as every launcher gives it

    def run_group(self, specs: list[dict[str, Any]], env: dict[str, str], on_outcome: Any, on_progress: Any = None,
                  on_warn: Any = None) -> list[ChildOutcome]:
        outcomes = []
        for i, spec in enumerate(specs):
            outcomes.append(self._sleep(spec))
            on_outcome(i, outcomes[-1])
        return outcomes

    def stop_all(self) -> None: ...


MIXED = """
name = "mixed"
share_engines = true
[defaults]
min_iters = 1
min_seconds = 0.0
[[case]]
scenario = "shared"
share = "a"
tag = 0
seconds = 2.0
[[case]]
scenario = "shared"
share = ""
tag = 1
seconds = 1.0
[[case]]
scenario = "shared"
share = "a"
tag = 2
seconds = 1.0
[[case]]
scenario = "shared"
share = ""
tag = 3
seconds = 1.5
[[case]]
scenario = "shared"
share = ""
tag = 4
seconds = 1.0
placement = {exclusive = true}
[[case]]
scenario = "shared"
share = ""
tag = 5
seconds = 1.0
placement = {gpus = 2}
[[case]]
scenario = "shared"
share = ""
matrix.tag = [6, 7]
seconds = 1.0
"""


def sleeps_as_quotes(suite: Suite, timed_s: float | None = None) -> dict[str, MeasuredCase]:
    """Each case quoted at its own `seconds` param (what the sleep scenario sleeps), with `timed_s`."""
    return {c.id: MeasuredCase(c.scenario, c.params_dict, c.params_dict["seconds"], timed_s=timed_s)
            for c in suite.cases}


def tags(suite: Suite) -> dict[str, int]:
    """Each case's `tag` param, by id."""
    return {c.id: c.params_dict["tag"] for c in suite.cases}


@pytest.mark.slow
def test_the_quotes_timeline_is_the_runners(tmp_path: Path, fault_plugin: str) -> None:
    """A share group, cases alone, an exclusive one and a two-GPU one over two slots: each case starts
    where the quote's timeline says (their quotes are their sleeps), and the run lasts its makespan. The
    run's own overhead (starting each case, recording each result) makes each start a little late, more
    so on a loaded host; the test reads how late from the run itself, and holds the order to the quote's."""
    suite = load_suite(str(write(tmp_path, MIXED)))
    measured = sleeps_as_quotes(suite)
    plan = run_schedule(suite, suite.cases, measured, CPU, 2)
    line = plan.timeline()
    tag = tags(suite)
    want = {tag[i]: s for i, s in line.starts.items()}
    assert want == {0: 0.0, 2: 2.0, 1: 0.0, 3: 1.0, 4: 3.0, 5: 4.0, 6: 5.0, 7: 5.0}  # the rule, worked by hand
    assert line.makespan_s == 6.0
    seconds = {c.id: c.params_dict["seconds"] for c in suite.cases}  # all set-up: nothing waits once started
    assert line.ends == {i: s + seconds[i] for i, s in line.starts.items()}
    assert run_schedule(suite, suite.cases, measured, CPU, 1).timeline().makespan_s == 9.5  # one slot: the sum

    rs = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu", gpus="0,1",
                                                       parallel=True, launcher=SleepLauncher())))
    assert all(c.status == "ok" for c in rs.cases)
    t0 = min(c.info["start"] for c in rs.cases)  # the run's first case (after the fingerprint)
    got = {c.params["tag"]: c.info["start"] - t0 for c in rs.cases}
    ended = {c.params["tag"]: c.info["end"] - t0 for c in rs.cases}
    took = max(ended.values())
    ends = {tag[i]: e for i, e in line.ends.items()}
    for a, b in itertools.permutations(want, 2):
        if ends[b] <= want[a]:  # the quote has b over before a starts: a slot's next case, or one alone after all
            assert got[a] >= ended[b], f"case {a} started at {got[a]:.2f} s, before case {b} ended ({ended[b]:.2f} s)"
        elif min(ends[a], ends[b]) - max(want[a], want[b]) >= 1.0:  # side by side for a second or more
            assert got[a] < ended[b] and got[b] < ended[a], f"cases {a} and {b} did not run side by side: {got}"
    # how much longer than the quote's timeline the run took: the starts' lateness, which grows case by case
    late = max(took - line.makespan_s, 0.0)
    assert took >= line.makespan_s - 0.05, (took, line.makespan_s)  # each case sleeps its quote
    for t, s in want.items():
        assert -0.05 < got[t] - s < 0.6 + late, (
            f"case {t} started at {got[t]:.2f} s; the quote says {s:.2f} s, and the run took {late:.2f} s "
            f"more than its makespan of {line.makespan_s:g} s")
    assert rs.cases[0].info.get("ran_alone") is None
    assert next(c for c in rs.cases if c.params["tag"] == 4).info["ran_alone"] == SUITE_SAYS


def test_the_oneshot_clock_reads_the_quote_as_its_timeline_has_cases_done(tmp_path: Path,
                                                                          fault_plugin: str) -> None:
    """Over two GPUs the clock's quote for the cases done is when the timeline has them done, not the
    sum of their quotes (which, cases side by side, ran past the quote for all of them)."""
    suite = load_suite(str(write(tmp_path, MIXED)))
    tag = tags(suite)
    for slots, first_two, all_done in ((2, "0:02", "0:06"), (1, "0:03", "0:10")):  # one slot: 9.5 s, the sum
        schedule = run_schedule(suite, suite.cases, sleeps_as_quotes(suite), CPU, slots)
        journal = Journal(tmp_path / "log", UI(), time.monotonic(), None)
        journal.quoted(Plan(schedule.cases, schedule.times, "cpu", schedule=schedule))
        first = [c.id for c in schedule.cases[:2]] if slots == 1 else [i for i, t in tag.items() if t < 2]
        journal.done = set(first)  # two slots: tags 0 and 1, side by side from 0 s, 2 s and 1 s long
        assert journal.clock_now().endswith(f"quote {first_two} for 2 done, {all_done} for all 8")
        journal.done = set(tag)
        assert journal.clock_now().endswith(f"quote {all_done} for 8 done, {all_done} for all 8")


def test_a_budget_leaves_for_resume_what_would_start_too_late_on_the_timeline(tmp_path: Path,
                                                                              fault_plugin: str) -> None:
    suite = load_suite(str(write(tmp_path, MIXED)))
    line = run_schedule(suite, suite.cases, sleeps_as_quotes(suite), CPU, 2).timeline(budget_s=4.5)
    tag = tags(suite)
    assert sorted(tag[i] for i in line.left) == [5, 6, 7]  # they would start at 4 s and 5 s: no room left


QUIET = """
name = "quiet"
[defaults]
min_iters = 1
min_seconds = 0.0
[[case]]
scenario = "shared"
share = ""
tag = 0
seconds = 10.0
[[case]]
scenario = "shared"
share = ""
matrix.tag = [1, 2]
seconds = 3.0
"""


def test_the_timeline_keeps_timed_parts_apart_from_set_ups_and_each_other(tmp_path: Path, fault_plugin: str) -> None:
    """measure/quiet.py's rule on the quote's timeline. A 10 s case (8 s set-up, 2 s timed) and two 3 s
    ones (1 s set-up, 2 s timed) over two slots, worked by hand: the first short one is ready at 1 s and
    waits out the long one's set-up; at 8 s both are ready, the first ready times first (8-10 s), then the
    long one (10-12 s). The second short one starts at 10 s on the freed slot, may set up only once
    nothing times (12 s), and times 13-15 s. Without timed parts recorded every case is all set-up: no
    waits, 10 s in all. A serial run waits for no one."""
    suite = load_suite(str(write(tmp_path, QUIET)))
    tag = tags(suite)
    measured = partial(sleeps_as_quotes, suite)
    line = run_schedule(suite, suite.cases, measured(2.0), CPU, 2).timeline()
    assert {tag[i]: s for i, s in line.starts.items()} == {0: 0.0, 1: 0.0, 2: 10.0} and line.makespan_s == 15.0
    assert run_schedule(suite, suite.cases, measured(None), CPU, 2).timeline().makespan_s == 10.0
    assert run_schedule(suite, suite.cases, measured(2.0), CPU, 1).timeline().makespan_s == 16.0  # the sum
    within = run_schedule(suite, suite.cases, measured(2.0), CPU, 2).timeline(budget_s=12.5)
    assert [tag[i] for i in within.left] == [2]  # at 10 s its 3 s no longer fit


def test_a_case_records_its_timed_part_for_the_quotes() -> None:
    """A finished case's timed part (plan.timed_part): from its first timed window, as its phases note it,
    else its first recorded window, to its end; none where neither is recorded."""
    from llmbench.harness.plan import measured_case

    start = 1_795_700_000.0
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start))
    noted = CaseResult(id="a", scenario="gemm", params={}, status="ok", started_at=at, duration_s=30.0,
                       info={"quiet_phases_unix": [["setup", start, start], ["timed", start + 20, start + 24]],
                             "quiet_wait_s": 4.0, "windows_unix": [[start + 25, start + 27]]})
    windows = CaseResult(id="b", scenario="gemm", params={}, status="ok", started_at=at, duration_s=30.0,
                         info={"windows_unix": [[start + 25, start + 27]]})
    bare = CaseResult(id="c", scenario="gemm", params={}, status="ok", started_at=at, duration_s=30.0)
    assert measured_case(noted).seconds == 26.0 and measured_case(noted).timed_s == 6.0
    assert measured_case(windows).timed_s == 5.0 and measured_case(bare).timed_s is None


def test_a_run_with_no_timed_part_borrows_another_runs() -> None:
    """The quote is a case's longest run; where that run recorded no timed part (it ran before they were
    noted), another run of the case lends its own, as long as both ran the same way (on a shared
    session or not)."""
    from llmbench.harness.plan import overlay, with_timed_part

    old = MeasuredCase("gemm", {}, 40.0)
    new = MeasuredCase("gemm", {}, 30.0, timed_s=5.0)
    assert overlay({"a": new}, {"a": old})["a"].timed_s == 5.0 and overlay({"a": new}, {"a": old})["a"].seconds == 40.0
    assert with_timed_part(old, MeasuredCase("gemm", {}, 3.0, ran_shared=True, timed_s=2.0)).timed_s is None
    assert with_timed_part(MeasuredCase("gemm", {}, 4.0), new).timed_s == 4.0  # never more than the quote


LONG_LAST = """
name = "long-last"
[defaults]
min_iters = 1
min_seconds = 0.0
[[case]]
scenario = "shared"
share = ""
matrix.tag = [0, 1, 2, 3]
seconds = 1.0
[[case]]
scenario = "shared"
share = ""
tag = 4
seconds = 4.0
"""


def test_over_several_slots_the_longest_start_first_where_that_ends_sooner(tmp_path: Path,
                                                                            fault_plugin: str) -> None:
    """Four 1 s cases then a 4 s one over two slots: in suite order the long one starts last (6 s in all,
    and a 5 s budget leaves it); longest first ends at 4 s. One slot keeps the suite's order; where
    longest first gains nothing (a budget that leaves as many cases either way, at the same end), the
    suite's order stands."""
    suite = load_suite(str(write(tmp_path, LONG_LAST)))
    measured = sleeps_as_quotes(suite)
    tag = tags(suite)
    two = run_schedule(suite, suite.cases, measured, CPU, 2)
    assert [tag[c.id] for c in two.cases] == [4, 0, 1, 2, 3] and two.timeline().makespan_s == 4.0
    within = run_schedule(suite, suite.cases, measured, CPU, 2, budget_s=5.0)
    assert within.timeline(5.0).left == () and tag[within.cases[0].id] == 4
    assert [tag[c.id] for c in run_schedule(suite, suite.cases, measured, CPU, 1).cases] == [0, 1, 2, 3, 4]
    tight = run_schedule(suite, suite.cases, measured, CPU, 2, budget_s=1.5)  # 3 left either way, both end at 1 s
    assert [tag[c.id] for c in tight.cases] == [0, 1, 2, 3, 4]


def test_a_budget_cuts_the_short_cases_rather_than_a_long_one(tmp_path: Path, fault_plugin: str) -> None:
    """Four 1 s cases and a 3.5 s one over two slots within 3.6 s: in suite order the long one is left
    for --resume, longest first leaves one short case (the likeliest to fit once the run is under way).
    One case left either way: the order that leaves less time wins, though it ends later."""
    suite = load_suite(str(write(tmp_path, LONG_LAST.replace("seconds = 4.0", "seconds = 3.5"))))
    measured = sleeps_as_quotes(suite)
    tag = tags(suite)
    plan = run_schedule(suite, suite.cases, measured, CPU, 2, budget_s=3.6)
    assert tag[plan.cases[0].id] == 4 and [tag[i] for i in plan.timeline(3.6).left] == [3]


def test_a_node_goes_side_by_side_over_every_gpu_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert node_placement(None, None, cpu=False) == ("0,1", True)
    assert node_placement("1,0", None, cpu=False) == ("1,0", True)
    assert node_placement(None, False, cpu=False) == (None, False)  # --no-parallel: as on one GPU
    assert node_placement(None, None, cpu=True) == (None, False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert node_placement(None, None, cpu=False) == (None, False)  # one GPU: unchanged


@pytest.mark.slow
def test_oneshot_dry_run_on_two_gpus_quotes_them_side_by_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from llmbench.commands import oneshot
    from llmbench.hardware import nvml

    app = typer.Typer()
    oneshot.register(app)
    app.command("noop")(lambda: None)  # a group, so the command is named as on the real CLI

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(nvml, "handles", lambda: ["gpu0", "gpu1"])  # two GPUs NVML names nothing of
    runner = CliRunner()
    side = runner.invoke(app, ["oneshot", "quickstart", "--dry-run", "--out", str(tmp_path / "o")])
    assert side.exit_code == 0, side.output
    alone = runner.invoke(app, ["oneshot", "quickstart", "--dry-run", "--no-parallel", "--out", str(tmp_path / "o")])
    assert alone.exit_code == 0, alone.output
    assert "over 2 GPUs side by side" in " ".join(side.output.split())
    assert "timed parts kept apart from set-ups and from each other" in " ".join(side.output.split())
    assert "side by side" not in alone.output
