"""`llmbench fleet`: one `llmbench oneshot` per GPU type through SkyPilot managed jobs, the bundles
collected, and one comparison (tables, HTML report, costs at the prices given) written."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import typer

from llmbench import api
from llmbench.commands.common import err_console
from llmbench.commands.costopts import PRICE_OPT, PRICES_OPT, RUN_TOKENS_OPT
from llmbench.errors import UserError
from llmbench.fleet import (
    BUNDLES_DIR,
    TERMINAL_OK,
    FleetJob,
    FleetState,
    Launcher,
    SkyPilotLauncher,
    collected,
    job_name,
    new_run_id,
    parse_gpus,
    run_fleet,
)
from llmbench.hardware.fingerprint import llmbench_info
from llmbench.report.answer_view import answer_tables
from llmbench.report.cost_view import cost_table
from llmbench.report.tables import to_markdown
from llmbench.report.views import comparison_tables

# Replaced by tests (the launch boundary); the real one imports SkyPilot when called.
LAUNCHER: Callable[[], Launcher] = SkyPilotLauncher
TASK_FILE = Path("deploy/skypilot.yaml")
RAY_TASK_FILE = Path("deploy/skypilot-ray.yaml")


def fleet_cmd(
    gpus: Optional[str] = typer.Option(
        None, "--gpus", metavar="H100:1,A100-80GB:1,...",
        help="One managed job per entry, as SkyPilot names accelerators (NAME or NAME:COUNT).",
    ),
    bucket: Optional[str] = typer.Option(
        None, "--bucket", metavar="URI",
        help="A bucket folder you own (s3://..., gs://..., r2://...): the jobs copy their bundles to URI/<run>/.",
    ),
    spot: bool = typer.Option(False, "--spot", help="Spot instances; a pre-empted job is recovered by SkyPilot."),
    budget: str = typer.Option("45m", "--budget", help="Each job's llmbench oneshot --budget."),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="Folder of this fleet: fleet.json (its state), bundles/, comparison.md, "
        "report.html (default: fleets/<run>)."
    ),
    resume: bool = typer.Option(
        False, "--resume", help="Pick up the fleet in --out (after this process died): launch what was not "
        "launched, wait for what has not ended, collect."
    ),
    collect: Optional[Path] = typer.Option(
        None, "--collect", metavar="DIR",
        help="Launch nothing: compare the bundles or result sets already in DIR (e.g. copied by hand).",
    ),
    task_file: Optional[Path] = typer.Option(
        None, "--task", help="The SkyPilot task file (run from the llmbench checkout; default "
        f"{TASK_FILE}, with --ray {RAY_TASK_FILE})."
    ),
    ray: bool = typer.Option(False, "--ray", help="Each --gpus entry a Ray cluster of --nodes machines running "
                             "--suite through `llmbench run --launcher ray`, instead of one oneshot per machine."),
    nodes: int = typer.Option(2, "--nodes", min=1, help="With --ray: machines per cluster."),
    suite: Optional[str] = typer.Option(None, "--suite", help="With --ray: the suite the clusters run."),
    baseline: Optional[str] = typer.Option(None, "--baseline", "-b", help="GPU slug of the baseline."),
    price: Optional[list[str]] = PRICE_OPT,
    prices_file: Optional[Path] = PRICES_OPT,
    run_tokens: int = RUN_TOKENS_OPT,
) -> None:
    """Run llmbench oneshot on several GPU types at once through SkyPilot (pip install 'llmbench\\[fleet]'),
    collect the bundles and write the comparison and report. Needs SkyPilot set up for a cloud
    (`sky check`), a bucket you can write, and the llmbench checkout as the working directory (the
    task file deploy/skypilot.yaml copies it to each machine)."""
    if collect is not None:
        if gpus or bucket or resume:
            raise UserError("--collect compares a folder and launches nothing: leave out --gpus, --bucket and --resume")
        _compare_folder(collect, collect, baseline, price, prices_file, run_tokens)
        return
    if not ray and suite is not None:
        raise UserError("--suite goes with --ray (a oneshot fleet runs oneshot's own suite)")
    if ray and not resume and not suite:
        raise UserError("--ray needs --suite: the suite each Ray cluster runs, e.g. --suite ceilings")
    task_file = task_file or (RAY_TASK_FILE if ray else TASK_FILE)
    state, out = _state(gpus, bucket, spot, budget, out, resume, task_file)
    if ray and not resume:
        state.suite, state.nodes = suite, nodes
    api.check_prices(price or [], prices_file)  # before anything is rented
    launcher = LAUNCHER()
    checkout = llmbench_info()  # the set header's llmbench record, not a case's info
    envs = {"LLMBENCH_GIT_COMMIT": checkout["git_commit"] or ""}
    if checkout.get("git_dirty"):
        err_console.print("note: the checkout has uncommitted changes; the jobs run them, "
                          "the result sets name the commit")
    run_fleet(launcher, state, task_file, out, envs, say=lambda m: err_console.print(m, highlight=False),
              secret_envs=ray_token)
    failed = [j for j in state.jobs if j.status != TERMINAL_OK]
    for j in failed:
        err_console.print(f"{j.name} ({j.gpu}) ended {j.status}: its bundle may be missing; "
                          f"sky jobs logs {j.job_id} shows why", highlight=False)
    kept, left_out = api.measured_prices(price or [], collected(out / BUNDLES_DIR))
    for p in left_out:
        err_console.print(f"--price {p}: no job measured that GPU; left out", highlight=False)
    _compare_folder(out / BUNDLES_DIR, out, baseline, kept, prices_file, run_tokens)
    if failed:
        raise typer.Exit(1)


def ray_token() -> dict[str, str]:
    """A Ray cluster's own token (Ray's token authentication), one per job; never saved nor shown."""
    return {"RAY_AUTH_TOKEN": secrets.token_hex(32)}


def _state(gpus: Optional[str], bucket: Optional[str], spot: bool, budget: str, out: Optional[Path],
           resume: bool, task_file: Path) -> tuple[FleetState, Path]:
    """A new fleet's state from the options, or the saved one with --resume; bad options exit 2."""
    if not task_file.is_file():
        raise UserError(f"--task {str(task_file)!r}: no such file; run from the llmbench checkout "
                        "(the task copies it to the machine) or name the task file")
    project = Path("pyproject.toml")
    if not project.is_file() or 'name = "llmbench"' not in project.read_text(encoding="utf-8"):
        raise UserError(f"run llmbench fleet from the llmbench checkout (not {str(Path.cwd())!r}): the task's "
                        "workdir is the current folder, copied to each machine and installed there")
    if resume:
        if out is None:
            raise UserError("--resume needs --out: the folder of the fleet to pick up")
        if gpus or bucket:
            raise UserError("--resume takes the GPUs and bucket from OUT/fleet.json: leave out --gpus and --bucket")
        return FleetState.load(out), out
    if not gpus:
        raise UserError("--gpus is required, e.g. --gpus H100:1,A100-80GB:1,H200:1")
    if not bucket or "://" not in bucket:
        raise UserError(f"--bucket {bucket!r}: give a bucket folder URI you can write, e.g. s3://my-bucket/llmbench")
    if not budget.strip():
        raise UserError("--budget: give a time, e.g. 45m")
    run = new_run_id()
    out = out or Path("fleets") / run
    api.check_out_dir(out)
    if (out / "fleet.json").exists():
        raise UserError(f"--out {str(out)!r} already holds a fleet; pick it up with --resume or choose another folder")
    jobs = [FleetJob(g, job_name(run, g)) for g in parse_gpus(gpus)]
    return FleetState(run, bucket, spot, budget.strip(), jobs), out


def _compare_folder(folder: Path, out: Path, baseline: Optional[str], price: Optional[list[str]],
                    prices_file: Optional[Path], run_tokens: int) -> None:
    """Compare each suite of the collected result sets measured on two or more GPUs (api.compare_by_suite);
    write comparison.md and report.html."""
    found = api.compare_by_suite(collected(folder), baseline=baseline, prices=price or [], prices_file=prices_file)
    for suite, name in found.single:
        err_console.print(f"suite {suite}: measured on {name} only; nothing to compare", highlight=False)
    if not found.suites:
        raise UserError(f"{folder}: no suite was measured on two or more GPUs; nothing to compare")
    costs = {sec.title: [cost_table(sec.cmp, found.prices, run_tokens)] for sec in found.suites
             if found.prices is not None and sec.cmp is not None}
    md = out / "comparison.md"
    md.write_text("\n".join(to_markdown(answer_tables(sec.cmp) + comparison_tables(sec.cmp) + costs.get(sec.title, []),
                                        sec.title) for sec in found.suites if sec.cmp), encoding="utf-8")
    err_console.print(f"wrote {md}", highlight=False)
    from llmbench.report.html import REPORT_EXTRA, charts_missing, render_html

    missing = charts_missing()  # plots need matplotlib (llmbench[report]); comparison.md is written without it
    if missing:
        err_console.print(f"no report.html: it needs {missing} ({REPORT_EXTRA})", highlight=False)
        return
    path = out / "report.html"
    path.write_text(render_html(found.suites, "llmbench fleet", more=costs), encoding="utf-8")
    err_console.print(f"wrote {path}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("fleet")(fleet_cmd)
