"""Result sets and bundles under concurrent writers, a full disk and odd files to resume: every
measured case ends up on disk (or in a file the run names), and no writer overwrites another's."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from llmbench.bundle import read_bundle
from llmbench.errors import UserError
from llmbench.hardware.fingerprint import cpu_slug
from llmbench.harness.launchers.local import IsolatedProcess
from llmbench.harness.plan import MeasuredCase
from llmbench.harness.runner import RunOptions, run_suite, skipped_result
from llmbench.harness.ui import UI
from llmbench.results import CaseResult, ResultSet, history_of, latest_result, load, save
from llmbench.suite import CaseSpec, load_suite
from tests.conftest import EVENT_S, ROOT, Posted, write

SLEEPS = """
name = "sleeps"
[defaults]
min_iters = 1
min_seconds = 0.0
[[case]]
scenario = "fault"
kind = "sleep"
matrix.seconds = [0.0, 0.5, 0.6, 0.7, 0.8]
"""


def _write_sets(out: str, writer: int, n: int) -> None:
    from llmbench.results import save_new

    for i in range(n):
        save_new(ResultSet(suite="race", description=f"{writer}-{i}"), Path(out), "x", "race")


def _write_bundle(out: str, writer: int) -> None:
    from llmbench.bundle import write_new_bundle

    write_new_bundle(Path(out), "x", {}, {"who.txt": str(writer)})


def test_new_names_are_claimed_once_by_any_number_of_writers(tmp_path: Path) -> None:
    """Six processes write five sets each into one folder, as fast as they can (many within one
    second): every set keeps a file of its own, and names still sort oldest first."""
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_write_sets, args=(str(tmp_path), w, 5)) for w in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    files = sorted((tmp_path / "x").glob("race-*.json"))
    assert len(files) == 30
    assert sorted(load(f).description or "" for f in files) == sorted(f"{w}-{i}" for w in range(6) for i in range(5))
    assert latest_result(tmp_path, "x", "race") == files[-1]  # the plain name sorts before its `_<us>` siblings
    mine = [load(f).description for f in files if (load(f).description or "").startswith("3-")]
    assert mine == [f"3-{i}" for i in range(5)]  # one writer's sets, listed by name, in the order written

    bundles = [ctx.Process(target=_write_bundle, args=(str(tmp_path / "b"), w)) for w in range(4)]
    for p in bundles:
        p.start()
    for p in bundles:
        p.join(60)
    got = sorted(read_bundle(f).files["who.txt"].decode() for f in (tmp_path / "b").glob("x-*.tar.gz"))
    assert got == [str(w) for w in range(4)]
    assert not list((tmp_path / "b").glob(".*"))  # no temporary file left behind


def test_latest_result_is_this_suites_own() -> None:
    """`fp8-linear-tiny-<UTC>.json` lies beside `fp8-linear`'s sets and is not one of them."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        folder = Path(d) / "x"
        folder.mkdir()
        for name in ("fp8-linear-20260101T000000Z.json", "fp8-linear-tiny-20270101T000000Z.json",
                     "fp8-linear-20260101T000000Z_000123.json", "fp8-linear-notes.json"):
            (folder / name).write_text("{}")
        assert latest_result(Path(d), "x", "fp8-linear") == folder / "fp8-linear-20260101T000000Z_000123.json"


def _run(suite: Path, out: Path, *extra: str, env: dict[str, str] | None = None,
         prelude: str = "") -> subprocess.Popen[str]:
    """`llmbench run SUITE --out OUT --cpu` in a process of its own (`prelude`: Python run first)."""
    code = f"{prelude}\nfrom llmbench.cli import main\nmain()"
    return subprocess.Popen([sys.executable, "-c", code, "run", str(suite), "--out", str(out), "--cpu", *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "200", **(env or {})})


@pytest.mark.slow
def test_runs_started_at_once_into_one_out_each_keep_their_set(tmp_path: Path, fault_plugin: str) -> None:
    suite = write(tmp_path, SLEEPS.replace("[0.0, 0.5, 0.6, 0.7, 0.8]", "[0.0]"))
    procs = [_run(suite, tmp_path / "out") for _ in range(3)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    files = list((tmp_path / "out").glob("*/sleeps-*.json"))
    assert len(files) == 3
    assert [len(load(f).cases) for f in files] == [1, 1, 1]


@pytest.mark.slow
def test_two_resumes_of_one_set_with_other_filters_lose_no_case(tmp_path: Path, fault_plugin: str) -> None:
    """A set holds one case; two `--resume` runs, started at once, measure two others each (one of
    them both): the set holds every case, once, and a case both measured keeps the earlier result
    under `history`."""
    suite = write(tmp_path, SLEEPS)
    out = tmp_path / "out"
    path = out / cpu_slug() / "sleeps-20260101T000000Z.json"
    first = load_suite(str(suite)).cases[0]
    save(_set_of("sleeps", [CaseResult(id=first.id, scenario=first.scenario, params=first.params_dict,
                                       status="ok", duration_s=1.0)]), path)
    pids = tmp_path / "pids"  # each case process leaves <pid>.pid holding its seconds
    pids.mkdir()
    a = _run(suite, out, "--resume", "-k", "seconds=0.5,0.6", env={"LLMBENCH_TEST_PID_DIR": str(pids)})
    b = _run(suite, out, "--resume", "-k", "seconds=0.6,0.7", env={"LLMBENCH_TEST_PID_DIR": str(pids)})
    texts = [p.communicate(timeout=300)[0] for p in (a, b)]
    assert (a.returncode, b.returncode) == (0, 0), texts
    assert list(out.glob("*/sleeps-*.json")) == [path]  # one set, still
    rs = load(path)
    assert sorted(c.params["seconds"] for c in rs.cases) == [0.0, 0.5, 0.6, 0.7]
    assert all(c.status == "ok" for c in rs.cases)
    both = next(c for c in rs.cases if c.params["seconds"] == 0.6)
    measured = sum(f.read_text() == "0.6" for f in pids.glob("*.pid"))  # by one run or by both
    assert 1 + len(history_of(both)) == measured


@pytest.mark.slow
def test_a_full_disk_keeps_the_last_good_set_and_the_unsaved_case_in_a_named_file(
    tmp_path: Path, fault_plugin: str
) -> None:
    """The disk fills up once the set holds two cases (RLIMIT_FSIZE in the run's process, from then on
    no file may grow past the set's size): the third case cannot be written. The run says so in one
    line, ends with exit 3 (not a case's 1), the set keeps its two cases, and the third is in a set
    of its own in the temporary folder that the message names."""
    suite = write(tmp_path, SLEEPS.replace("[0.0, 0.5, 0.6, 0.7, 0.8]", "[0.0, 0.1, 0.2]"))
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    prelude = f"""
import json, resource, threading, time
from pathlib import Path
def fill_disk():
    while True:
        for f in Path({str(out)!r}).glob("*/sleeps-*.json"):
            try:
                if len(json.loads(f.read_text())["cases"]) == 2:
                    size = f.stat().st_size + 64
                    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
                    return
            except ValueError:
                pass
        time.sleep(0.02)
threading.Thread(target=fill_disk, daemon=True).start()
"""
    proc = _run(suite, out, env={"TMPDIR": str(tmp)}, prelude=prelude)
    text = proc.communicate(timeout=300)[0]
    assert proc.returncode == 3, text
    assert "Traceback" not in text
    path = next(out.glob("*/sleeps-*.json"))
    error = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and str(path.name) in error[0] and "File too large" in error[0], text
    assert [c.params["seconds"] for c in load(path).cases] == [0.0, 0.1]  # the last good version
    aside = list(tmp.glob("llmbench-unsaved-sleeps-*.json"))
    assert len(aside) == 1 and aside[0].name in error[0]
    kept = load(aside[0])
    assert [(c.params["seconds"], c.status) for c in kept.cases] == [(0.2, "ok")]
    assert kept.cases[0].metrics["time_ms"].samples


def _set_of(suite: str, cases: list[CaseResult] | None = None) -> ResultSet:
    return ResultSet(suite=suite, env={"gpu": {"slug": cpu_slug(), "count": 0}}, cases=cases or [])


@pytest.mark.slow
def test_resume_refuses_another_suites_set_and_writes_through_a_symlink(tmp_path: Path, fault_plugin: str) -> None:
    suite = load_suite(str(write(tmp_path, SLEEPS)))
    out = tmp_path / "out"
    renamed = out / cpu_slug() / "sleeps-20260101T000000Z.json"  # a set of suite "other" given this suite's name
    save(_set_of("other"), renamed)
    with pytest.raises(UserError, match=r"'other'.*'sleeps'"):
        run_suite(suite, suite.cases[:1], RunOptions(out_dir=out, device="cpu", resume=True))
    assert load(renamed).suite == "other" and load(renamed).cases == []

    target = tmp_path / "store" / "kept.json"
    save(_set_of("sleeps", [skipped_result(c, "planted") for c in suite.cases[1:]]), target)
    renamed.unlink()
    link = out / cpu_slug() / "sleeps-20260102T000000Z.json"
    link.symlink_to(target)
    run_suite(suite, suite.cases[:1], RunOptions(out_dir=out, device="cpu", resume=True))
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert sorted(c.params["seconds"] for c in load(target).cases) == [0.0, 0.5, 0.6, 0.7, 0.8]


class _Gate(IsolatedProcess):
    """Real case processes; the 0.5 s case hands its result back only once the 0.0 s case is being
    acknowledged (`released`), so it ends while the runner is busy with the other (`returned`)."""

    def __init__(self) -> None:
        self.released, self.returned = threading.Event(), threading.Event()

    def run(self, spec: dict[str, Any], env: dict[str, str], timeout_s: float, on_progress: Any = None) -> Any:
        out = super().run(spec, env, timeout_s, on_progress)
        if spec["params"].get("seconds") == 0.5:
            self.released.wait(EVENT_S)
            self.returned.set()
        return out


@pytest.mark.slow
def test_under_parallel_every_ended_case_is_on_disk_before_the_next_one_starts(
    tmp_path: Path, fault_plugin: str, posted: Posted
) -> None:
    suite = load_suite(str(write(tmp_path, SLEEPS.replace("0.7, 0.8", "0.7"))))
    gate = _Gate()
    seen: list[tuple[str, set[str]]] = []  # each case as it starts, with the cases then on disk

    class Watch(UI):
        path: Path | None = None

        def suite_start(self, suite: Any, cases: list[CaseSpec], path: Path, skipped: int) -> None:
            self.path = path

        def case_start(self, case: CaseSpec, index: int) -> None:
            assert self.path is not None
            seen.append((case.id, {c.id for c in load(self.path).cases}))

        def case_done(self, case: CaseSpec, result: Any) -> None:
            assert self.path is not None and case.id in {c.id for c in load(self.path).cases}
            if case.params_dict["seconds"] == 0.0:
                gate.released.set()
                assert gate.returned.wait(EVENT_S)
                # the 0.5 s case's thread puts its result in the queue
                assert posted.wait([c.id for c in suite.cases if c.params_dict["seconds"] == 0.5])

    # equal quotes: the cases start in suite order (longest-first would gain nothing), as the gate needs
    same = {c.id: MeasuredCase(c.scenario, c.params_dict, 1.0) for c in suite.cases}
    opts = RunOptions(out_dir=tmp_path / "out", device="cpu", gpus="0,1", parallel=True, launcher=gate,
                      reference_times=same)
    rs = load(run_suite(suite, suite.cases, opts, Watch()))
    assert len(rs.cases) == 4
    seconds = {c.id: c.params_dict["seconds"] for c in suite.cases}
    on_disk = {seconds[cid]: sorted(seconds[i] for i in disk) for cid, disk in seen}
    assert on_disk[0.6] == [0.0, 0.5], on_disk  # both ended cases written before the next one started
