"""`llmbench oneshot`: everything a freshly rented GPU machine should do, in one command — check the
stack (doctor), run the headline suite (or others) within a wall-clock budget, and leave one bundle
`<gpu-slug>-<UTC>.tar.gz` with the result sets, the HTML report, the log and the environment. An
interrupt (Ctrl-C, SIGTERM from a pre-empted spot instance or `timeout`) writes the bundle of what
finished; `--resume BUNDLE` continues it, on this machine or another of the same GPU model."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from llmbench import __version__
from llmbench.analysis.compare import headline_metric_names
from llmbench.analysis.inputs import SetRef, load_bundle_checked
from llmbench.analysis.labels import gpu_display_name
from llmbench.bundle import Bundle, bundle_name, is_bundle, write_bundle
from llmbench.commands.common import CEILINGS_OPT, SUITES_OPT, ceilings_env, check_out_dir, console, err_console
from llmbench.commands.run import RichUI, exit_code, plan_tables, quote_summary, run_progress
from llmbench.errors import UserError
from llmbench.hardware import nvml
from llmbench.hardware.fingerprint import llmbench_info, local_device, local_slug
from llmbench.harness.doctor import Check, run_checks
from llmbench.harness.isolation import PACKAGE_ROOT, check_gpu_count
from llmbench.harness.plan import ok_case_times, reference_times
from llmbench.harness.runner import DONE_STATUSES, RunOptions, check_parallel, foreign_gpu_processes, run_suite
from llmbench.precision import DeviceInfo
from llmbench.report.terminal import print_terminal, status_counts
from llmbench.results import CaseResult, load, save, utc_now
from llmbench.suite import CaseSpec, Suite, load_suite

DEFAULT_SUITES = ["headline"]
REFERENCE_RESULTS = Path(PACKAGE_ROOT) / "results"  # committed result sets: budget quotes on a fresh machine
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?$")


def parse_budget(text: str) -> float:
    """'45m', '1h30m', '90s' or plain seconds ('900') -> seconds."""
    m = _DURATION.match(text.strip().lower())
    if not text.strip() or m is None or not any(m.groups()):
        raise UserError(f"--budget {text!r}: give a duration such as 45m, 1h30m, 900s or 900 (seconds)")
    h, mins, s = (float(g) if g else 0.0 for g in m.groups())
    seconds = h * 3600 + mins * 60 + s
    if seconds <= 0:
        raise UserError(f"--budget {text!r}: the budget must be more than 0 seconds")
    return seconds


class OneshotUI(RichUI):
    """The run's progress on the terminal, and the same lines, plain, in a log file (appended as they
    happen, so a crash keeps them)."""

    def __init__(self, progress: Any, log: Path) -> None:
        super().__init__(progress)
        self.log = log
        self.paths: list[Path] = []  # the result set of each suite started, also one interrupted mid-run

    def line(self, text: str) -> None:
        _log(self.log, text)

    def suite_start(self, suite: Suite, cases: list[CaseSpec], path: Path, skipped: int) -> None:
        super().suite_start(suite, cases, path, skipped)
        self.paths.append(path)
        self.line(f"suite {suite.name}: {len(cases)} case(s) to run, {skipped} already done -> {path.name}")

    def case_start(self, case: CaseSpec, index: int) -> None:
        super().case_start(case, index)
        self.line(f"start    {case.id} {case.label}")

    def case_done(self, case: CaseSpec, result: CaseResult) -> None:
        super().case_done(case, result)
        gpus = f" [gpus {result.info['gpus']}]" if result.info.get("gpus") else ""
        self.line(f"{result.status:8} {case.id} {case.label} ({result.duration_s or 0:.0f} s){gpus}"
                  + (f": {result.reason}" if result.reason else ""))

    def case_deferred(self, case: CaseSpec, needs_s: float, left_s: float) -> None:
        super().case_deferred(case, needs_s, left_s)
        self.line(f"deferred {case.id} {case.label}: needs about {needs_s:.0f} s, {max(left_s, 0):.0f} s left")

    def warn(self, text: str) -> None:
        super().warn(text)
        self.line(f"warning: {text}")


def _stack_problem(checks: list[Check], cpu: bool) -> str | None:
    """Why benchmarking here would measure nothing true: a failed doctor check, or (without --cpu) a
    GPU that torch cannot use."""
    failed = [c for c in checks if c.level == "fail"]
    if failed:
        return "; ".join(f"{c.name}: {c.detail}" for c in failed)
    cuda = next((c for c in checks if c.name == "cuda"), None)
    if not cpu and cuda is not None and cuda.level != "ok":
        seen = len(nvml.handles())
        if seen:
            return (f"torch sees no CUDA GPU while the driver (NVML) sees {seen}: the driver, CUDA and torch "
                    "do not match (a CPU build of torch, or a driver too old for torch's CUDA)")
        return "no NVIDIA GPU here (neither NVML nor torch finds one); oneshot --cpu runs on the CPU"
    return None


def _command_text(args: list[str], timeout_s: float = 60) -> str:
    """A command's output for the bundle's env/ folder; what went wrong, if it failed."""
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s, check=False)
        return out.stdout + (f"\n[stderr]\n{out.stderr}" if out.returncode else "")
    except (OSError, subprocess.SubprocessError) as e:
        return f"{' '.join(args)}: {e}\n"


def environment_files(checks: list[Check], part: int) -> dict[str, bytes | str]:
    """doctor's checks, pip freeze and nvidia-smi of this machine, for env/part-N/ in the bundle."""
    files: dict[str, bytes | str] = {
        f"env/part-{part}/doctor.json": json.dumps([asdict(c) for c in checks], indent=1),
        f"env/part-{part}/pip-freeze.txt": _command_text([sys.executable, "-m", "pip", "freeze"]),
    }
    if shutil.which("nvidia-smi"):
        files[f"env/part-{part}/nvidia-smi.txt"] = _command_text(["nvidia-smi"])
    return files


def _place_resumed(bundle: Bundle, out: Path) -> dict[str, Path]:
    """Write the bundle's result sets under OUT/<slug>/, where the runner continues them; by suite."""
    placed: dict[str, Path] = {}
    for member, rs in bundle.result_sets:
        path = out / rs.gpu_slug / Path(member).name
        if path.exists() and load(path).model_dump() != rs.model_dump():
            raise UserError(f"--out {str(out)!r} already holds {path.name}, which differs from the copy in "
                            f"{bundle.path.name}; give another --out")
        if not path.exists():
            save(rs, path)
        placed[rs.suite] = path
    return placed


def _bundled_suites(bundle: Bundle, out: Path) -> list[Suite]:
    """The suites a bundle was run with, from the copies it carries (suites/<name>.toml): a resumed run
    has the same cases as the first part, whatever this machine's checkout holds."""
    names = bundle.manifest.get("suites") or []
    odd = [n for n in names if not isinstance(n, str) or not n or n.startswith(".") or "/" in n or "\\" in n]
    if odd:  # each name becomes OUT/suites/<name>.toml: an absolute or nested name would write outside it
        raise UserError(f"--resume {bundle.path.name}: the bundle's suite name {odd[0]!r} is not a plain name")
    missing = [n for n in names if f"suites/{n}.toml" not in bundle.files]
    if not names or missing:
        raise UserError(f"--resume {bundle.path.name}: the bundle does not carry its suite file(s) "
                        f"{', '.join(missing or ['(none listed)'])}; name the suites to run after the command")
    loaded = []
    for n in names:
        path = out / "suites" / f"{n}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bundle.files[f"suites/{n}.toml"])
        loaded.append(load_suite(str(path)))
    return loaded


def _report_html(paths: list[Path], title: str) -> tuple[str | None, str | None]:
    """The HTML report of the result sets, one section each; None and why, where it cannot be drawn."""
    try:
        from llmbench.report.html import Section, render_html

        headline = frozenset(headline_metric_names())  # as `llmbench report` shows by default
        sections = []
        for p in paths:
            rs = load(p)
            sections.append(Section(f"{rs.suite} on {rs.env.get('gpu', {}).get('name', rs.gpu_slug)}",
                                    [SetRef(name=rs.gpu_slug, rs=rs, stem=p.stem)], 0, headline))
        return render_html(sections, title), None
    except Exception as e:  # a report problem must not cost the bundle its result sets
        return None, f"{type(e).__name__}: {e}"


def _part_summary(checks: list[Check], started: str, budget_s: float | None, interrupted: bool,
                  deferred: int) -> dict[str, Any]:
    """This session, for the manifest's `parts`: when, with what budget, how it ended, and the machine's
    stack as doctor saw it (a resumed result set keeps the first part's `env`)."""
    return {"started_at": started, "ended_at": utc_now(), "budget_s": budget_s, "interrupted": interrupted,
            "deferred": deferred, "llmbench": {**llmbench_info(), "version": __version__},
            "stack": {c.name: c.detail for c in checks if c.name in ("torch", "nvml", "gpu", "cuda", "mig")}}


def _log(log: Path, text: str) -> None:
    with log.open("a", encoding="utf-8") as f:
        f.write(f"{utc_now()} {text}\n")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def oneshot(
    suites: Optional[list[str]] = typer.Argument(
        None, help="Suites to run, in order (default: headline; with --resume: the bundle's)."),
    budget: Optional[str] = typer.Option(
        None, "--budget", help="Wall-clock budget for the whole command, e.g. 45m, 1h30m, 900: a case is "
        "started only if its time (measured here or in the committed results/ of this GPU, else estimated) "
        "fits in what is left; the rest are left for --resume."),
    out: Path = typer.Option(Path("oneshot"), "--out", help="Folder for the result sets, the log and the bundle."),
    resume: Optional[Path] = typer.Option(
        None, "--resume", help="A bundle of an earlier oneshot: continue its result sets (cases done there are "
        "not run again; this machine must have the same GPU model)."),
    gpus: Optional[str] = typer.Option(None, "--gpus", help="GPUs for the case processes: 0, 0,1 or MIG-<uuid>,..."),
    parallel: bool = typer.Option(False, "--parallel", metavar="", help="Run cases side by side, one per --gpus "
                                  "entry (multi-GPU cases take as many as they need)."),
    cpu: bool = typer.Option(False, "--cpu", metavar="", help="Run on the CPU (tests; no GPU figures)."),
    dry_run: bool = typer.Option(False, "--dry-run", metavar="", help="Print the plan with each case's quoted "
                                 "time (as --budget reads it) and the total; run nothing."),
    suite_dirs: Optional[list[Path]] = SUITES_OPT,
    ceilings: Optional[Path] = CEILINGS_OPT,
) -> None:
    """A freshly rented machine in one command: doctor, the headline suite within --budget, and one
    bundle <gpu-slug>-<UTC>.tar.gz (result sets, HTML report, log, environment) in --out.

    Ctrl-C or SIGTERM writes the bundle of what finished (exit 130); --resume BUNDLE continues it.
    Exit code 1: the stack is broken (doctor) or a case failed or timed out; 2: bad input."""
    t0 = time.monotonic()
    started = utc_now()
    seconds = parse_budget(budget) if budget is not None else None
    check_out_dir(out)
    check_gpu_count(gpus, cpu, len(nvml.handles()) if gpus is not None and not cpu else 0)
    check_parallel(gpus, parallel)
    case_env = ceilings_env(ceilings, out, also=REFERENCE_RESULTS)
    slug = local_slug(gpus, cpu)
    previous: Bundle | None = None
    if resume is not None:
        if not is_bundle(resume):
            raise UserError(f"--resume {str(resume)!r}: give a bundle (.tar.gz) written by llmbench oneshot")
        previous = load_bundle_checked(resume)
        theirs = sorted({rs.gpu_slug for _, rs in previous.result_sets})
        if theirs != [slug]:
            raise UserError(f"--resume {resume.name}: its result sets were measured on {', '.join(theirs)}; this "
                            f"machine is {slug} (a result set holds one GPU model): run oneshot without --resume")
    if suites or previous is None:
        loaded = [load_suite(n, suite_dirs or []) for n in suites or DEFAULT_SUITES]
    else:
        loaded = _bundled_suites(previous, out)
    names = [s.name for s in loaded]
    if dry_run:
        _print_plan(loaded, slug, local_device(gpus, cpu), out, previous)
        return
    placed = _place_resumed(previous, out) if previous else {}
    part = len((previous.manifest.get("parts") if previous else None) or []) + 1
    log = out / "logs" / f"oneshot-{started.replace(':', '').replace('-', '')}.log"
    log.parent.mkdir(parents=True, exist_ok=True)

    head = (f"llmbench oneshot on {slug}: {', '.join(names)}" + (f", budget {_duration(seconds)}" if seconds else "")
            + (f", resuming {resume.name} (part {part})" if resume else ""))
    console.print(head)
    _log(log, head)
    for line in filter(None, (s.where() for s in loaded)):
        console.print(escape(line), highlight=False)
        _log(log, line)
    console.print("doctor: checking driver, CUDA, torch and that work runs on the GPU ...")
    checks = run_checks(gpus)
    for c in checks:
        _log(log, f"doctor {c.level} {c.name}: {c.detail}")
        if c.level != "ok":
            console.print(f"  [yellow]{c.level}[/yellow] {c.name}: {escape(c.detail)}")
    problem = _stack_problem(checks, cpu)
    if problem:
        _log(log, f"stopped: the stack is broken: {problem}")
        err_console.print(f"[red]error:[/red] the stack is broken, nothing was measured: {escape(problem)} "
                          "(llmbench doctor repeats the checks)", soft_wrap=True)
        raise typer.Exit(1)
    others = foreign_gpu_processes(gpus) if not cpu else []
    if others:
        msg = (f"{len(others)} other process(es) on the GPU ({', '.join(str(p['pid']) for p in others)}): "
               "they share it and falsify timings")
        console.print(f"[yellow]warning:[/yellow] {escape(msg)}")
        _log(log, f"warning: {msg}")
    files = environment_files(checks, part)

    reference = reference_times(REFERENCE_RESULTS, slug, other_gpus=True)
    interrupted = False
    with run_progress() as p:
        ui = OneshotUI(p, log)
        try:
            for s in loaded:
                left = None if seconds is None else max(seconds - (time.monotonic() - t0), 1.0)
                opts = RunOptions(out_dir=out, resume=s.name in placed, resume_from=placed.get(s.name), gpus=gpus,
                                  device="cpu" if cpu else "auto", budget_s=left, parallel=parallel,
                                  reference_times=reference, extra_env=case_env)
                run_suite(s, s.cases, opts, ui)
        except KeyboardInterrupt:
            interrupted = True
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cost the bundle
    if interrupted:
        err_console.print("interrupted: writing the bundle of what finished ...")
    deferred = ui.deferred
    # every set this session wrote (one interrupted mid-run included), and resumed sets it did not reach
    written = list(dict.fromkeys([*ui.paths, *(p for p in placed.values() if p.exists())]))
    files.update({f"suites/{s.name}.toml": s.path.read_bytes() for s in loaded})
    counts: dict[str, int] = {}
    for w in written:
        for k, v in status_counts(load(w)).items():
            counts[k] = counts.get(k, 0) + v
    left_over = f", {deferred} left for --resume (budget)" if deferred else ""
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + left_over
    _log(log, f"{'interrupted' if interrupted else 'done'}: {summary}")
    path = _write(out, slug, written, previous, files, log, part,
                  _part_summary(checks, started, seconds, interrupted, deferred))
    console.print(summary)
    if interrupted or deferred:  # plain lines, never wrapped: a script can take the path from them
        typer.echo(f"continue with: llmbench oneshot --resume {path}")
    typer.echo(f"bundle: {path}")
    if interrupted:
        raise typer.Exit(130)
    code = exit_code(counts, strict=False)
    if code:
        raise typer.Exit(code)


def _print_plan(loaded: list[Suite], slug: str, device: DeviceInfo, out: Path, previous: Bundle | None) -> None:
    """The cases still to run and their quotes: the resumed bundle's times, this folder's earlier runs,
    the committed results/ of this GPU (or, for a case never measured on it, of another GPU, named),
    else the scenarios' estimates; nothing for a case this device will skip."""
    measured = reference_times(REFERENCE_RESULTS, slug, other_gpus=True)
    measured.update(reference_times(out, slug))
    done: set[str] = set()
    for _, rs in previous.result_sets if previous else []:
        measured.update(ok_case_times(rs))
        done |= {c.id for c in rs.cases if c.status in DONE_STATUSES}
    cases = [c for s in loaded for c in s.cases if c.id not in done]
    tables, total, quotes = plan_tables(cases, measured, device, slug)
    print_terminal(tables, console)
    console.print(f"{len(cases)} case(s) to run{f' ({len(done)} done in the bundle)' if done else ''}, about "
                  f"{total / 60:.1f} min on {gpu_display_name(slug)} ({escape(quote_summary(quotes, slug))}), plus "
                  "doctor and the bundle; nothing was run")


def _write(out: Path, slug: str, written: list[Path], previous: Bundle | None, files: dict[str, bytes | str],
           log: Path, part: int, summary: dict[str, Any]) -> Path:
    """The bundle: this session's result sets (a resumed set holds the earlier parts' cases too), the
    earlier parts' logs and environment, this part's, the HTML report and the manifest."""
    members: dict[str, bytes | str] = {}
    if previous is not None:
        members.update({k: v for k, v in previous.files.items() if k.startswith(("logs/", "env/"))})
    members.update(files)
    members[f"logs/part-{part}.log"] = log.read_bytes() if log.exists() else b""
    html, why = _report_html(written, f"llmbench oneshot: {slug}")
    if html is not None:
        members["report.html"] = html
    parts = [*((previous.manifest.get("parts") or []) if previous else []), summary]
    suites = [n[len("suites/"):-len(".toml")] for n in files if n.startswith("suites/")]
    extra = {"command": "oneshot", "suites": suites, "parts": parts, **({"report_missing": why} if why else {})}
    return write_bundle(out / bundle_name(slug), {w.name: load(w) for w in written}, members, extra)


def register(app: typer.Typer) -> None:
    app.command("oneshot")(oneshot)
