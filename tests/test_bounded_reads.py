"""Reads bounded by what is needed, not by what lies on disk: the time quotes read result sets only (by
name, each under results.MAX_SET_BYTES), a bundle's logs are read only when asked and then as their tail,
and input that is not what it claims to be (a junk newest set, a manifest that is a list) is one line,
exit 2. Peak memory is measured on a real `llmbench` process (getrusage of a wrapper's children)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from test_bad_inputs import SLUG, invoke
from test_compare_support import h100_set, h200_set

from llmbench.bundle import LOG_READ_BYTES, MANIFEST, read_bundle, write_bundle
from llmbench.cli import main
from llmbench.report.terminal import warning_summary
from llmbench.results import CaseResult, ResultSet, save, to_json
from llmbench.suite import load_suite

ROOT = Path(__file__).resolve().parent.parent
MIB = 1 << 20


def peak_rss_mib(args: list[str], cwd: Path) -> tuple[int, subprocess.CompletedProcess[str]]:
    """Run `python -m llmbench ARGS` and return its peak resident memory (MiB) and the finished process."""
    wrapper = ("import resource, subprocess, sys\n"
               "p = subprocess.run([sys.executable, '-m', 'llmbench', *sys.argv[1:]], capture_output=True, text=True)\n"
               "sys.stdout.write(p.stdout + '\\x00' + p.stderr + '\\x00' + str(p.returncode) + '\\x00'\n"
               "                 + str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", wrapper, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120, check=True)
    out, err, code, rss_kib = done.stdout.split("\x00")
    return int(rss_kib) >> 10, subprocess.CompletedProcess(args, int(code), out, err)


def sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk (a stray download, a core dump)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.truncate(size)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("command", [["run", "quickstart"], ["oneshot", "quickstart"]])
def test_a_huge_file_under_out_costs_the_dry_run_quote_no_memory(command: list[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    sparse(out / SLUG / "quickstart-20990101T000000Z.json", 3 << 30)  # named like the newest set: too big to be one
    sparse(out / SLUG / "notes.json", 3 << 30)  # not named like a set: never read
    rss, done = peak_rss_mib([*command, "--cpu", "--dry-run", "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert rss < 1024, f"peak RSS {rss} MiB"
    said = done.stdout + done.stderr
    assert said.count("passed over 1 file(s)") == 1 and "quickstart-20990101T000000Z.json" in said
    assert "notes.json" not in said


def _bundle_with_log(path: Path, log_bytes: int, log_dir: Path) -> Path:
    """A bundle as oneshot writes it, plus a log member of `log_bytes` zeros (compressed to little)."""
    write_bundle(path, {"quickstart-20260101T000000Z.json": h100_set()}, {"logs/part-1.log": "ok\n"},
                 {"command": "oneshot"})
    with tarfile.open(path, "r:gz") as src:
        members = [(m, src.extractfile(m).read()) for m in src.getmembers()]  # type: ignore[union-attr]
    big = sparse(log_dir / f"big-{log_bytes}.log", log_bytes)
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for m, data in members:
            tar.addfile(m, io.BytesIO(data))
        tar.add(big, arcname="logs/huge.log")
    return path


@pytest.mark.slow
def test_compare_of_a_bundle_does_not_read_its_logs(tmp_path: Path) -> None:
    other = tmp_path / "h200.json"
    save(h200_set(), other)
    small = _bundle_with_log(tmp_path / "small.tar.gz", 1 << 10, tmp_path)
    large = _bundle_with_log(tmp_path / "large.tar.gz", 200 * MIB, tmp_path)
    base_rss, done = peak_rss_mib(["compare", str(small), str(other)], tmp_path)
    assert done.returncode == 0, done.stderr
    rss, done = peak_rss_mib(["compare", str(large), str(other)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert rss - base_rss < 50, f"a 200 MiB log cost compare {rss - base_rss} MiB"
    log = read_bundle(large).files["logs/huge.log"]  # asked for: its tail only
    assert log.startswith(b"[... ") and len(log) < LOG_READ_BYTES + 100


def test_a_bundle_member_larger_than_it_can_be_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "b.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(MANIFEST)
        info.size = 17 * MIB  # the header's size is what is checked: no need to compress that much
        tar.addfile(info, io.BytesIO(b" " * info.size))
    with pytest.raises(ValueError, match=r"member manifest\.json holds 17 MiB"):
        read_bundle(path)


def test_a_bundle_whose_manifest_is_a_list_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in ((MANIFEST, b"[1, 2]"), ("results/x/quickstart-20260101T000000Z.json",
                                                   to_json(h100_set()).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    other = tmp_path / "h200.json"
    save(h200_set(), other)
    code, err = invoke(["compare", str(path), str(other)], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "manifest.json holds a JSON list" in err and str(path) in err


def _set_of(suite: str, done: int) -> ResultSet:
    """A CPU result set of `suite` whose first `done` cases ran ok."""
    cases = load_suite(suite).cases[:done]
    return ResultSet(suite=suite, env={"gpu": {"slug": SLUG, "name": "none (CPU)", "count": 0}},
                     cases=[CaseResult(id=c.id, scenario=c.scenario, params=c.params_dict, status="ok",
                                       duration_s=1.0) for c in cases])


@pytest.mark.slow
@pytest.mark.parametrize("junk", ["{\"schema_version\": 1, \"suite\": \"quicks", "[1, 2, 3]"])
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_junk_newest_set_on_resume_is_one_line_exit_2(
    junk: str, dry_run: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    save(_set_of("quickstart", 1), out / SLUG / "quickstart-20260101T000000Z.json")
    newest = out / SLUG / "quickstart-20260102T000000Z.json"
    newest.write_text(junk)
    monkeypatch.setattr("llmbench.hardware.nvml.handles", lambda: [])
    before = sorted(out.rglob("*"))
    code, err = invoke(["run", "quickstart", "--cpu", "--resume", "--out", str(out), *(["--dry-run"] * dry_run)],
                       monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "--resume" in err and str(newest) in err and "not a readable result set" in err
    assert sorted(out.rglob("*")) == before


def test_resume_dry_run_plans_only_what_resume_would_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    every = len(load_suite("quickstart").cases)
    save(_set_of("quickstart", 2), out / SLUG / "quickstart-20260101T000000Z.json")
    (out / SLUG / "quickstart-notes.json").write_text("not a set, not named like one")

    def plan(*flags: str) -> str:
        monkeypatch.setattr(sys, "argv", ["llmbench", "run", "quickstart", "--cpu", "--dry-run", "--out", str(out),
                                          *flags])
        with pytest.raises(SystemExit) as exc:
            main()
        assert exc.value.code in (0, None)
        return " ".join(capsys.readouterr().out.split())

    assert f"{every - 2} case(s) (2 already done, resumed), about" in plan("--resume")
    assert f"{every} case(s), about" in plan("--resume", "--force")
    assert f"{every} case(s), about" in plan()  # no --resume: every case


def test_quotes_read_sets_by_name_and_pass_over_a_broken_newest(tmp_path: Path) -> None:
    from llmbench.harness.plan import measured_cases, reference_times

    older = _set_of("quickstart", 2)
    save(older, tmp_path / SLUG / "quickstart-20260101T000000Z.json")
    save(_set_of("quickstart", 3), tmp_path / SLUG / "quickstart-extra-20260103T000000Z.json")  # another suite
    (tmp_path / SLUG / "quickstart-20260102T000000Z-a1b2.json").write_text(json.dumps({"not": "a set"}))
    unread: list[str] = []
    got, path = measured_cases(tmp_path, SLUG, "quickstart", unread)
    assert path == tmp_path / SLUG / "quickstart-20260101T000000Z.json" and set(got) == {c.id for c in older.cases}
    assert len(unread) == 1 and unread[0].startswith("quickstart-20260102T000000Z-a1b2.json (")
    assert len(reference_times(tmp_path, SLUG, suites={"quickstart"})) == 2
    assert len(reference_times(tmp_path, SLUG)) == 3  # any suite's sets where none are named


def test_show_of_a_set_with_many_warnings_prints_a_screen_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rs = _set_of("quickstart", 1)
    rs.warnings = [f"step {i}: clock at {1000 + i % 7} MHz" for i in range(20_000)]
    rs.warnings += [f"the GPU is shared with {name}" for name in ("xorg", "python", "java", "node", "ruby")]
    path = tmp_path / "quickstart-20260101T000000Z.json"
    save(rs, path)
    monkeypatch.setattr(sys, "argv", ["llmbench", "show", str(path)])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code in (0, None)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning:")]
    assert len(lines) == 5, lines
    assert "step 0..19999: clock at 1000..1006 MHz (20000 times)" in lines[0] and "with xorg" in lines[1]
    assert "2 more warning(s) of 2 other kind(s): llmbench show --all" in lines[4]
    assert warning_summary(rs.warnings, every=True) == rs.warnings  # show --all: every one


@pytest.mark.parametrize(("tables", "says"), [
    ('[[case]]\nscenario = "gemm"\nprecision = "fp32"\n[[case]]\nscenario = "gemm"\nprecision = "fp32"\n'
     'min_iters = 3\n', "case 2 repeats case 1: case id gemm/"),
    ('[[case]]\nscenario = "gemm"\nmatrix.precision = ["fp32", "fp32"]\n',
     "case 1's matrix repeats a case: case id gemm/"),
])
def test_duplicate_case_ids_are_one_line_exit_2_naming_the_id_and_tables(
    tables: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "dup.toml"
    suite.write_text('name = "dup"\n' + tables)
    code, err = invoke(["run", str(suite), "--cpu", "--dry-run", "--out", str(tmp_path / "out")], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert says in err and "fp32" in err
    assert not (tmp_path / "out").exists()
