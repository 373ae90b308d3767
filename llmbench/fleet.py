"""Fleets: one `llmbench oneshot` per GPU type as SkyPilot managed jobs (or, with a suite, one Ray cluster per
GPU type), waited for, and their bundles collected into one folder. SkyPilot is reached only through
`Launcher` (tests pass a fake); OUT/fleet.json is rewritten atomically after every step, so `--resume`
picks up a fleet whose local process died. docs/design.md, "Cost and fleets"."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from llmbench.errors import UserError
from llmbench.results import write_atomic

STATE_FILE = "fleet.json"
BUNDLES_DIR = "bundles"
INSTALL = "pip install 'llmbench[fleet]'"
# SkyPilot's accelerator spelling: NAME or NAME:COUNT (H100:1, A100-80GB:1, H200:8).
_GPU = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(:[1-9][0-9]*)?$")
TERMINAL_OK = "SUCCEEDED"
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED", "NOT_FOUND"})


def parse_gpus(text: str) -> list[str]:
    """'H100:1,A100-80GB:1' -> ['H100:1', 'A100-80GB:1'] (a bare name means one GPU)."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UserError("--gpus: give one or more SkyPilot accelerators, e.g. --gpus H100:1,A100-80GB:1,H200:1")
    for t in items:
        if not _GPU.match(t):
            raise UserError(f"--gpus {t!r}: expected NAME or NAME:COUNT as SkyPilot spells it, "
                            "e.g. H100:1 or A100-80GB:1")
    if len(set(items)) != len(items):
        raise UserError(f"--gpus {text!r}: a GPU is named twice")
    return [t if ":" in t else f"{t}:1" for t in items]


def new_run_id(now: datetime | None = None) -> str:
    return "fleet-" + (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")


def job_name(run: str, gpu: str) -> str:
    """A managed job's name: the run and the accelerator, in the characters SkyPilot names allow."""
    return re.sub(r"[^a-z0-9-]+", "-", f"llmbench-{run}-{gpu}".lower()).strip("-")


class Launcher(Protocol):
    """The boundary to SkyPilot (tests replace it)."""

    def launch(self, task_file: Path, gpu: str, spot: bool, envs: dict[str, str], name: str,
               nodes: int = 1) -> int:
        """Launch the task as a managed job on `gpu` (on `nodes` machines); returns the job id."""
        ...

    def wait(self, job_id: int) -> str:
        """Block until the job ends; returns its final status (TERMINAL)."""
        ...

    def download(self, uri: str, dest: Path) -> None:
        """Copy the bucket folder `uri` into `dest`."""
        ...


@dataclass
class FleetJob:
    gpu: str
    name: str
    job_id: int | None = None
    status: str = "not launched"


@dataclass
class FleetState:
    run: str
    bucket: str
    spot: bool
    budget: str
    jobs: list[FleetJob] = field(default_factory=list)
    suite: str | None = None  # a Ray fleet's suite (each job a Ray cluster running it); None: oneshot
    nodes: int = 1  # a Ray fleet's machines per job

    @property
    def uri(self) -> str:
        """Where this fleet's bundles land: the bucket folder of the run."""
        return f"{self.bucket.rstrip('/')}/{self.run}"

    def save(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / STATE_FILE, json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(cls, out: Path) -> FleetState:
        path = out / STATE_FILE
        if not path.is_file():
            raise UserError(f"--resume: {str(path)!r} does not exist; start a fleet with --gpus and --bucket first")
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            jobs = [FleetJob(**j) for j in data.pop("jobs")]
            return cls(**data, jobs=jobs)
        except (ValueError, TypeError, KeyError) as e:
            raise UserError(f"{path}: not a fleet state file: {e}") from None


def run_fleet(
    launcher: Launcher,
    state: FleetState,
    task_file: Path,
    out: Path,
    envs: dict[str, str],
    say: Callable[[str], None] = lambda _: None,
    secret_envs: Callable[[], dict[str, str]] = dict,
) -> FleetState:
    """Launch every job not yet launched, wait for every job not yet ended, then download the run's
    bundles into OUT/bundles. The state is saved after each step. `secret_envs` gives each job's own
    credentials (a Ray cluster's token): handed to the launch, never saved nor said."""
    state.save(out)
    for job in state.jobs:
        if job.job_id is not None:
            continue
        job_envs = {**envs, "LLMBENCH_BUCKET": state.bucket, "LLMBENCH_RUN": state.run, "LLMBENCH_BUDGET": state.budget}
        if state.suite is None:
            say(f"launching {job.name} on {job.gpu}{' (spot)' if state.spot else ''}")
            job.job_id = launcher.launch(task_file, job.gpu, state.spot, job_envs, job.name)
        else:
            say(f"launching {job.name}: a Ray cluster of {state.nodes} x {job.gpu}{' (spot)' if state.spot else ''} "
                f"running suite {state.suite}")
            job.job_id = launcher.launch(task_file, job.gpu, state.spot,
                                         {**job_envs, "LLMBENCH_SUITE": state.suite, **secret_envs()}, job.name,
                                         nodes=state.nodes)
        job.status = "launched"
        state.save(out)
    for job in state.jobs:
        if job.status in TERMINAL or job.job_id is None:
            continue
        say(f"waiting for {job.name} (managed job {job.job_id})")
        job.status = launcher.wait(job.job_id)
        state.save(out)
        say(f"{job.name}: {job.status}")
    dest = out / BUNDLES_DIR
    dest.mkdir(parents=True, exist_ok=True)
    say(f"collecting {state.uri} into {dest}")
    launcher.download(state.uri, dest)
    return state


def collected(folder: Path) -> list[Path]:
    """The bundles (*.tar.gz) and plain result sets (*.json) in a collection folder, by name."""
    if not folder.is_dir():
        raise UserError(f"{folder}: no such folder")
    files = sorted([*folder.rglob("*.tar.gz"), *folder.rglob("*.json")])
    if not files:
        raise UserError(f"{folder}: no bundles (*.tar.gz) or result sets (*.json) were collected")
    return files


class SkyPilotLauncher:
    """The real boundary: SkyPilot's Python SDK (managed jobs), imported when a fleet starts."""

    def __init__(self) -> None:
        try:
            import sky
        except ImportError:
            raise UserError(f"llmbench fleet needs SkyPilot, which is not installed: {INSTALL}") from None
        self.sky = sky

    def launch(self, task_file: Path, gpu: str, spot: bool, envs: dict[str, str], name: str,
               nodes: int = 1) -> int:
        import yaml  # a SkyPilot dependency

        config = yaml.safe_load(task_file.read_text(encoding="utf-8"))
        if nodes > 1:
            config["num_nodes"] = nodes
        task = self.sky.Task.from_yaml_config(config, env_overrides=list(envs.items()))
        task.set_resources_override({"accelerators": gpu, "use_spot": spot})
        job_ids, _handle = self.sky.stream_and_get(self.sky.jobs.launch(task, name=name))
        job_id = job_ids[0] if isinstance(job_ids, list) else job_ids
        if job_id is None:
            raise RuntimeError(f"SkyPilot returned no job id for {name}")
        return int(job_id)

    def wait(self, job_id: int) -> str:
        from sky.exceptions import JobExitCode

        code = self.sky.get(self.sky.jobs.wait(job_id=job_id))
        try:
            return JobExitCode(code).name
        except ValueError:
            return f"exit {code}"

    def download(self, uri: str, dest: Path) -> None:
        from sky import cloud_stores

        command = cloud_stores.get_storage_from_path(uri).make_sync_dir_command(uri, str(dest))
        done = subprocess.run(["bash", "-c", command], check=False)
        if done.returncode != 0:
            raise UserError(f"could not copy {uri} to {dest} (exit {done.returncode}); copy it with your cloud's "
                            f"CLI and run llmbench fleet --collect {dest}")
