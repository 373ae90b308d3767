"""llmbench fleet: the SkyPilot task file through SkyPilot's own parser, and the orchestration with
SkyPilot's calls replaced at the boundary (no cloud is reached)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from test_compare_support import H100_ENV, H200_ENV, case, metric, result_set
from typer.testing import CliRunner

from llmbench.commands import fleet as fleet_cmd
from llmbench.errors import UserError
from llmbench.fleet import FleetState, SkyPilotLauncher, collected, job_name, parse_gpus
from llmbench.results import ResultSet, save

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "deploy" / "skypilot.yaml"
RAY_TASK = ROOT / "deploy" / "skypilot-ray.yaml"
runner = CliRunner()
A100_ENV = {**H200_ENV, "gpu": {**H200_ENV["gpu"], "slug": "a100-sxm-80gb", "name": "NVIDIA A100-SXM4-80GB"}}
ENVS = {"H100:1": H100_ENV, "H200:1": H200_ENV, "A100-80GB:1": A100_ENV}
TPS = {"H100:1": 2500.0, "H200:1": 2800.0, "A100-80GB:1": 1000.0}


def _set(gpu: str) -> ResultSet:
    return result_set(ENVS[gpu], [case("generate", {"precision": "bf16", "batch_size": 8},
                                       {"output_tokens_per_s": metric("output_tokens_per_s", TPS[gpu])})],
                      suite="oneshot")


class FakeSky:
    """The launch boundary: records launches, 'runs' each job by dropping a result set in its bucket."""

    def __init__(self, bucket: Path, fail: frozenset[str] = frozenset(), die_at: int | None = None) -> None:
        self.bucket, self.fail, self.die_at = bucket, fail, die_at
        self.launched: list[tuple[str, bool, dict[str, str], str]] = []
        self.waited: list[int] = []
        self.gpu_of: dict[int, str] = {}
        self.nodes: list[int] = []
        self.task_files: list[Path] = []

    def launch(self, task_file: Path, gpu: str, spot: bool, envs: dict[str, str], name: str, nodes: int = 1) -> int:
        if self.die_at is not None and len(self.launched) == self.die_at:
            raise KeyboardInterrupt  # the local process dies mid-launch
        self.launched.append((gpu, spot, envs, name))
        self.nodes.append(nodes)
        self.task_files.append(task_file)
        job = 100 + len(self.launched)
        self.gpu_of[job] = gpu
        return job

    def wait(self, job_id: int) -> str:
        self.waited.append(job_id)
        gpu = self.gpu_of[job_id]
        if gpu in self.fail:
            return "FAILED"
        run = self.launched[0][2]["LLMBENCH_RUN"] if self.launched else "r"
        save(_set(gpu), self.bucket / run / f"{gpu.split(':')[0].lower()}.json")
        return "SUCCEEDED"

    def download(self, uri: str, dest: Path) -> None:
        run = uri.rsplit("/", 1)[1]
        if (self.bucket / run).is_dir():
            shutil.copytree(self.bucket / run, dest, dirs_exist_ok=True)


@pytest.fixture
def app() -> typer.Typer:
    a = typer.Typer()
    fleet_cmd.register(a)
    a.command("noop")(lambda: None)  # two commands: typer keeps the subcommand name
    return a


def _sky() -> Any:
    """SkyPilot, or a skip naming its install; `nox -s tests_fleet` sets LLMBENCH_REQUIRE_SKYPILOT=1 so
    that a missing SkyPilot fails there instead of skipping."""
    if os.environ.get("LLMBENCH_REQUIRE_SKYPILOT"):
        import sky

        return sky
    return pytest.importorskip("sky", reason="SkyPilot parses the task file: pip install 'llmbench[fleet]'")


def _use(monkeypatch: pytest.MonkeyPatch, fake: FakeSky) -> None:
    monkeypatch.setattr(fleet_cmd, "LAUNCHER", lambda: fake)


def test_task_file_parses_with_skypilot() -> None:
    sky = _sky()
    import yaml

    task = sky.Task.from_yaml(str(TASK))
    assert task.name == "llmbench-oneshot" and task.workdir == "."
    (res,) = task.resources
    assert res.accelerators == {"H100": 1} and not res.use_spot
    assert "llmbench oneshot --budget" in task.run and "pip install -e '.[all]'" in task.setup
    config = yaml.safe_load(TASK.read_text())
    overrides = [("LLMBENCH_BUCKET", "gs://b/llmbench"), ("LLMBENCH_RUN", "r1")]
    task = sky.Task.from_yaml_config(config, env_overrides=overrides)
    storage = task.storage_mounts["/llmbench-out"]
    assert storage.source == "gs://b/llmbench" and storage.mode.value == "MOUNT"
    task.set_resources_override({"accelerators": "A100-80GB:1", "use_spot": True})
    (res,) = task.resources
    assert res.accelerators == {"A100-80GB": 1} and res.use_spot


def test_skypilot_launcher_hands_sky_a_managed_job_for_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    sky = _sky()
    seen = {}

    def launch(task: object, name: str) -> str:
        seen["task"], seen["name"] = task, name
        return "request-1"

    monkeypatch.setattr(sky.jobs, "launch", launch)
    monkeypatch.setattr(sky, "stream_and_get", lambda request: ([7], None) if request == "request-1" else None)
    monkeypatch.setattr(sky.jobs, "wait", lambda job_id: f"wait-{job_id}")
    monkeypatch.setattr(sky, "get", lambda request: 0 if request == "wait-7" else 100)
    launcher = SkyPilotLauncher()
    envs = {"LLMBENCH_BUCKET": "s3://b/x", "LLMBENCH_RUN": "fleet-1", "LLMBENCH_BUDGET": "30m"}
    assert launcher.launch(TASK, "H200:1", True, envs, "llmbench-fleet-1-h200-1") == 7
    task = seen["task"]
    (res,) = task.resources  # type: ignore[attr-defined]
    assert res.accelerators == {"H200": 1} and res.use_spot and seen["name"] == "llmbench-fleet-1-h200-1"
    assert task.envs["LLMBENCH_BUDGET"] == "30m" and task.storage_mounts["/llmbench-out"].source == "s3://b/x"  # type: ignore[attr-defined]
    assert launcher.wait(7) == "SUCCEEDED" and launcher.wait(8) == "FAILED"


def test_a_whole_node_is_one_entry_whose_task_asks_for_every_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """--gpus H100:8 is one machine of eight GPUs: one managed job whose resources ask for all of them
    (its oneshot then places cases over every visible GPU: launch.node_placement)."""
    sky = _sky()
    seen = {}

    def launch(task: object, name: str) -> str:
        seen["task"] = task
        return "request-1"

    monkeypatch.setattr(sky.jobs, "launch", launch)
    monkeypatch.setattr(sky, "stream_and_get", lambda request: ([3], None))
    assert parse_gpus("H100:8") == ["H100:8"]
    envs = {"LLMBENCH_BUCKET": "s3://b/x", "LLMBENCH_RUN": "fleet-1"}
    assert SkyPilotLauncher().launch(TASK, "H100:8", False, envs, job_name("fleet-1", "H100:8")) == 3
    (res,) = seen["task"].resources  # type: ignore[attr-defined]
    assert res.accelerators == {"H100": 8} and seen["task"].num_nodes == 1  # type: ignore[attr-defined]
    assert "--gpus" not in seen["task"].run and "--no-parallel" not in seen["task"].run  # type: ignore[attr-defined]


def test_without_skypilot_the_fleet_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sky", None)  # import sky -> ImportError
    with pytest.raises(UserError, match=r"pip install 'llmbench\[fleet\]'"):
        SkyPilotLauncher()


def test_parse_gpus() -> None:
    assert parse_gpus("H100:1, A100-80GB:1,H200") == ["H100:1", "A100-80GB:1", "H200:1"]
    for bad in ["", "H100:0", "H100:x", "H 100", "H100,H100"]:
        with pytest.raises(UserError):
            parse_gpus(bad)
    assert job_name("fleet-20261124T061500Z", "A100-80GB:1") == "llmbench-fleet-20261124t061500z-a100-80gb-1"


def test_fleet_launches_waits_collects_and_compares_with_costs(
    app: typer.Typer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeSky(tmp_path / "bucket")
    _use(monkeypatch, fake)
    out = tmp_path / "fleet"
    res = runner.invoke(app, ["fleet", "--gpus", "A100-80GB:1,H100:1,H200:1", "--spot", "--bucket", "s3://b/llmbench",
                              "--budget", "30m", "--out", str(out), "--task", str(TASK),
                              "--price", "a100-sxm-80gb=1.29", "--price", "h100-sxm-80gb=2.49",
                              "--price", "b200-180gb=6"])
    assert res.exit_code == 0, res.output
    assert "--price b200-180gb=6: no job measured that GPU; left out" in res.output
    assert [(g, spot) for g, spot, _, _ in fake.launched] == [("A100-80GB:1", True), ("H100:1", True), ("H200:1", True)]
    envs = fake.launched[0][2]
    assert envs["LLMBENCH_BUCKET"] == "s3://b/llmbench" and envs["LLMBENCH_BUDGET"] == "30m"
    assert envs["LLMBENCH_RUN"].startswith("fleet-") and "LLMBENCH_GIT_COMMIT" in envs
    state = FleetState.load(out)
    assert [j.status for j in state.jobs] == ["SUCCEEDED"] * 3 and [j.job_id for j in state.jobs] == [101, 102, 103]
    md = (out / "comparison.md").read_text()
    assert "# Suite oneshot" in md and "## Cost at the given hourly prices" in md
    assert "A100 SXM4 80GB (baseline)" in md  # the first set collected (by file name), named by its GPU
    assert re.search(r"\$3\.2[23] \[", md)  # break-even of the H100: $1.29 x 2500/1000 tok/s = $3.225
    if (out / "report.html").exists():  # written where matplotlib is installed
        assert "Cost at the given hourly prices" in (out / "report.html").read_text()


def test_a_dead_fleet_resumes_from_its_state_file(
    app: typer.Typer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeSky(tmp_path / "bucket", die_at=1)
    _use(monkeypatch, fake)
    out = tmp_path / "fleet"
    args = ["fleet", "--gpus", "H100:1,H200:1", "--bucket", "s3://b/x", "--out", str(out), "--task", str(TASK)]
    res = runner.invoke(app, args)
    assert res.exit_code != 0  # interrupted
    state = FleetState.load(out)
    assert [(j.job_id, j.status) for j in state.jobs] == [(101, "launched"), (None, "not launched")]
    fake.die_at = None
    res = runner.invoke(app, ["fleet", "--resume", "--out", str(out), "--task", str(TASK)])
    assert res.exit_code == 0, res.output
    assert [g for g, _, _, _ in fake.launched] == ["H100:1", "H200:1"]  # H100 was not launched twice
    assert fake.waited == [101, 102] and (out / "comparison.md").exists()
    again = runner.invoke(app, args)
    assert isinstance(again.exception, UserError) and "already holds a fleet" in str(again.exception)


def test_a_failed_job_exits_1_and_the_rest_are_compared(
    app: typer.Typer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _use(monkeypatch, FakeSky(tmp_path / "bucket", fail=frozenset({"H200:1"})))
    out = tmp_path / "fleet"
    res = runner.invoke(app, ["fleet", "--gpus", "A100-80GB:1,H100:1,H200:1", "--bucket", "s3://b/x",
                              "--out", str(out), "--task", str(TASK)])
    assert res.exit_code == 1, res.output
    assert [j.status for j in FleetState.load(out).jobs] == ["SUCCEEDED", "SUCCEEDED", "FAILED"]
    md = (out / "comparison.md").read_text()
    assert "h100-sxm-80gb" in md and "h200-sxm-141gb" not in md


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "H100:0", "--bucket", "s3://b"], "NAME:COUNT"),
        (["--gpus", "H100:1"], "--bucket None"),
        (["--gpus", "H100:1", "--bucket", "my-bucket"], "bucket folder URI"),
        (["--bucket", "s3://b"], "--gpus is required"),
        (["--resume"], "fleet.json' does not exist"),
        (["--gpus", "H100:1", "--bucket", "s3://b", "--task", "nope.yaml"], "no such file"),
        (["--collect", "somewhere", "--gpus", "H100:1"], "launches nothing"),
        (["--gpus", "H100:1", "--bucket", "s3://b", "--price", "h100=2"],
         "'h100' is not a GPU slug; valid: h100-sxm-80gb"),
        (["--gpus", "H100:1", "--bucket", "s3://b", "--price", "h100-sxm-80gb=x"], "not a price"),
    ],
)
def test_bad_options_exit_2_before_anything_is_launched(
    app: typer.Typer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str], message: str
) -> None:
    fake = FakeSky(tmp_path / "bucket")
    _use(monkeypatch, fake)
    if "--task" not in args:
        args = [*args, "--task", str(TASK)]
    res = runner.invoke(app, ["fleet", *args, "--out", str(tmp_path / "o")])
    assert isinstance(res.exception, UserError) and message in str(res.exception), res.output
    assert fake.launched == [] and not (tmp_path / "o" / "fleet.json").exists()


def test_collection_takes_bundles_and_result_sets(app: typer.Typer, tmp_path: Path) -> None:
    folder = tmp_path / "got"
    save(_set("H100:1"), folder / "h100.json")
    save(_set("A100-80GB:1"), folder / "sub" / "a100.json")
    (folder / "h200-sxm-141gb-20261124T000000Z.tar.gz").write_bytes(b"")
    assert [p.name for p in collected(folder)] == ["h100.json", "h200-sxm-141gb-20261124T000000Z.tar.gz", "a100.json"]
    (folder / "h200-sxm-141gb-20261124T000000Z.tar.gz").unlink()
    res = runner.invoke(app, ["fleet", "--collect", str(folder), "--baseline", "h100-sxm-80gb"])
    assert res.exit_code == 0, res.output
    assert "H100 SXM5 80GB (baseline)" in (folder / "comparison.md").read_text()
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no bundles"):
        collected(tmp_path / "empty")


@pytest.mark.parametrize(
    ("oneshot_rc", "writes_bundle", "job_rc"), [(0, True, 0), (1, True, 0), (2, True, 2), (0, False, 3)]
)
def test_task_run_script_copies_the_bundle_and_sets_the_job_status(
    tmp_path: Path, oneshot_rc: int, writes_bundle: bool, job_rc: int
) -> None:
    """The task's `run` script in bash, with a stand-in `llmbench` (writes a bundle, exits as told) and
    the bucket mount replaced by a folder: the bundle lands under the run id, and only an exit above 1
    (not 'some cases failed') or a missing bundle fails the job."""
    import subprocess

    yaml = pytest.importorskip("yaml", reason="PyYAML (a SkyPilot dependency) reads the task file")
    script = yaml.safe_load(TASK.read_text())["run"].replace("/llmbench-out", str(tmp_path / "bucket"))
    home = tmp_path / "home"
    (home / "llmbench-venv" / "bin").mkdir(parents=True)
    fake = home / "llmbench-venv" / "bin" / "llmbench"
    write = 'mkdir -p "$5/x" && echo b > "$5/x/h100-sxm-80gb-20261124T000000Z.tar.gz"' if writes_bundle else "true"
    fake.write_text(f"#!/bin/bash\n{write}\nexit {oneshot_rc}\n")
    fake.chmod(0o755)
    (home / "llmbench-venv" / "bin" / "activate").write_text(f'PATH="{fake.parent}:$PATH"\n')
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "LLMBENCH_BUDGET": "1m", "LLMBENCH_RUN": "r1",
           "LLMBENCH_BUCKET": "s3://b/x"}
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == job_rc, done.stdout + done.stderr
    copied = list((tmp_path / "bucket" / "r1").glob("*.tar.gz")) if writes_bundle else []
    assert [p.name for p in copied] == (["h100-sxm-80gb-20261124T000000Z.tar.gz"] if writes_bundle else [])


def test_a_ray_fleet_launches_a_cluster_per_gpu_running_the_suite(
    app: typer.Typer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = FakeSky(tmp_path / "bucket")
    _use(monkeypatch, fake)
    monkeypatch.chdir(ROOT)  # the task's workdir is the checkout
    out = tmp_path / "fleet"
    res = runner.invoke(app, ["fleet", "--ray", "--nodes", "3", "--suite", "ceilings", "--gpus", "H100:1,H200:1",
                              "--bucket", "s3://b/llmbench", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert fake.nodes == [3, 3] and fake.task_files == [Path("deploy/skypilot-ray.yaml")] * 2
    tokens = [envs.pop("RAY_AUTH_TOKEN") for _, _, envs, _ in fake.launched]
    assert len(set(tokens)) == 2 and all(len(t) == 64 for t in tokens)  # one cluster, one token
    assert all(envs["LLMBENCH_SUITE"] == "ceilings" for _, _, envs, _ in fake.launched)
    state = FleetState.load(out)
    assert (state.suite, state.nodes) == ("ceilings", 3)
    for f in [out / "fleet.json", *out.rglob("*.md")]:
        assert not any(t in f.read_text() for t in tokens), f  # the tokens are kept nowhere
    assert not any(t in res.output for t in tokens)
    assert "a Ray cluster of 3 x H100:1 running suite ceilings" in " ".join(res.output.split())
    assert "# Suite oneshot" in (out / "comparison.md").read_text()  # the collected sets, compared


def test_a_ray_fleet_needs_its_suite(app: typer.Typer, tmp_path: Path) -> None:
    res = runner.invoke(app, ["fleet", "--ray", "--gpus", "H100:1", "--bucket", "s3://b/x", "--out", str(tmp_path)])
    assert res.exit_code != 0 and "--ray needs --suite" in str(res.exception or res.output)


def test_ray_task_file_parses_with_skypilot(monkeypatch: pytest.MonkeyPatch) -> None:
    sky = _sky()
    task = sky.Task.from_yaml(str(RAY_TASK))
    assert task.name == "llmbench-ray" and task.num_nodes == 2 and "'.[all,ray]'" in task.setup
    assert "--launcher ray --address auto" in task.run
    seen = {}
    monkeypatch.setattr(sky.jobs, "launch", lambda task, name: seen.setdefault("task", task) and "request-1")
    monkeypatch.setattr(sky, "stream_and_get", lambda request: ([9], None))
    envs = {"LLMBENCH_BUCKET": "s3://b/x", "LLMBENCH_SUITE": "ceilings", "RAY_AUTH_TOKEN": "t" * 64}
    assert SkyPilotLauncher().launch(RAY_TASK, "H200:1", False, envs, "llmbench-r-h200-1", nodes=3) == 9
    launched = seen["task"]
    assert launched.num_nodes == 3 and launched.envs["LLMBENCH_SUITE"] == "ceilings"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("rank", "run_rc", "job_rc"), [("0", 0, 0), ("0", 1, 0), ("0", 2, 2), ("1", 0, 0)])
def test_ray_task_run_script_starts_the_cluster_and_copies_the_sets(
    tmp_path: Path, rank: str, run_rc: int, job_rc: int
) -> None:
    """The Ray task's `run` script in bash, `ray` and `llmbench` replaced by stand-ins that log their
    arguments: node 0 starts the head, runs the suite over the cluster once every node is in, and copies
    its result sets under the run id; another node joins the head at the first of SKYPILOT_NODE_IPS."""
    import subprocess

    yaml = pytest.importorskip("yaml", reason="PyYAML (a SkyPilot dependency) reads the task file")
    script = yaml.safe_load(RAY_TASK.read_text())["run"].replace("/llmbench-out", str(tmp_path / "bucket"))
    script = script.replace("sleep 5", "true")
    home, log = tmp_path / "home", tmp_path / "calls.log"
    bin_dir = home / "llmbench-venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "ray").write_text(f'#!/bin/bash\necho "ray $*" >> {log}\n')
    (bin_dir / "llmbench").write_text(
        f'#!/bin/bash\necho "llmbench $* nodes=$LLMBENCH_RAY_NODES" >> {log}\n'
        'mkdir -p "${@: -2:1}/h100-sxm-80gb" && echo {} > "${@: -2:1}/h100-sxm-80gb/ceilings-20261126T000000Z.json"\n'
        f"exit {run_rc}\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    (bin_dir / "activate").write_text(f'PATH="{bin_dir}:$PATH"\n')
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "LLMBENCH_BUDGET": "1m", "LLMBENCH_RUN": "r1",
           "LLMBENCH_BUCKET": "s3://b/x", "LLMBENCH_SUITE": "ceilings", "SKYPILOT_NODE_RANK": rank,
           "SKYPILOT_NODE_IPS": "10.0.0.5\n10.0.0.6\n10.0.0.7"}
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == job_rc, done.stdout + done.stderr
    calls = log.read_text().splitlines()
    if rank != "0":
        assert calls == ["ray start --address 10.0.0.5:6379 --disable-usage-stats"]
        return
    assert calls[0] == "ray start --head --port 6379 --disable-usage-stats" and calls[-1] == "ray stop"
    assert calls[1].startswith("llmbench run ceilings --launcher ray --address auto --budget 1m --out ")
    assert calls[1].endswith(" -y nodes=3")
    copied = [p.name for p in (tmp_path / "bucket" / "r1").glob("*.json")]
    assert copied == ["ceilings-20261126T000000Z.json"]
