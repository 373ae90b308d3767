"""Ray as a case launcher (harness/launchers/ray.py), against a real local Ray cluster on the CPU (one per
module, `ray.init()` starting its GCS and raylet; not local_mode): a suite over Ray is the local
launcher's in shape, each case noting its node and launcher; a crash, a timeout, a killed Ray worker
and an interrupt each end only their case with every process of it gone; --resume finishes the rest;
a head that does not answer stops the run with one line before anything is written.

The tests marked `ray` skip without Ray, unless LLMBENCH_REQUIRE_RAY=1 (`nox -s tests_ray`, CI): there a
skip is a failure. The others (kinds, what reaches a task, the missing extra, credentials) run anywhere."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmbench import api
from llmbench.api import SessionUI
from llmbench.cli import main
from llmbench.errors import UserError
from llmbench.hardware.topology import MULTICAST_OFF_ENV
from llmbench.harness.launchers.choose import check_launcher, launcher_options
from llmbench.harness.launchers.ray import RayLauncher, forwarded_env, lost_reason
from llmbench.harness.launchers.ray_cluster import INSTALL, NodeKind, head_endpoint, import_ray, node_kinds
from llmbench.redact import redact
from llmbench.results import load
from llmbench.suite import CaseSpec
from tests.conftest import alive, wait_gone, write

TOKEN = "llmbench-test-ray-token-0123456789abcdef"  # the cluster's auth token: must reach no file
FAST = "[defaults]\nmin_iters = 2\nwarmup_iters = 0\nmax_iters = 5\nmin_seconds = 0.01\n"


def _require_ray() -> Any:
    try:
        import ray
    except ImportError:
        if os.environ.get("LLMBENCH_REQUIRE_RAY") == "1":
            pytest.fail(f"LLMBENCH_REQUIRE_RAY=1 but Ray is not installed: {INSTALL}")
        pytest.skip(f"Ray is not installed: {INSTALL}")
    return ray


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """One local Ray cluster for the module's runs (its token set, to check it reaches no file)."""
    ray = _require_ray()
    os.environ.setdefault("RAY_AUTH_TOKEN", TOKEN)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=80 * 1024**2)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture
def pids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault_plugin: str) -> Path:
    """Where the fault cases note their pids (reaches the tasks as an LLMBENCH_* setting)."""
    folder = tmp_path / "pids"
    folder.mkdir()
    monkeypatch.setenv("LLMBENCH_TEST_PID_DIR", str(folder))
    return folder


def suite(tmp_path: Path, kinds: list[str], seconds: float = 0.0, timeout_s: float = 120.0,
          name: str = "overray") -> Path:
    cases = "".join(f'[[case]]\nscenario = "fault"\nkind = "{k}"\nseconds = {seconds}\ntimeout_s = {timeout_s}\n'
                    for k in kinds)
    return write(tmp_path, f'name = "{name}"\n{FAST}{cases}', f"{name}.toml")


def run(path: Path, out: Path, ui: SessionUI | None = None, **kw: Any) -> Path:
    return api.run_suite(path, out=out, cpu=True, ui=ui, launcher="ray", **kw).path


def case_pids(folder: Path, suffix: str = ".pid") -> list[int]:
    return [int(p.name.removesuffix(suffix)) for p in folder.glob(f"*{suffix}")]


def wait_for(folder: Path, suffix: str, seconds: float = 120.0) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = case_pids(folder, suffix)
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no {suffix} file within {seconds}s")


def cli(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The exit code and stderr of `llmbench ARGS`, through main() (its exit codes: 2 for a user error)."""
    monkeypatch.setattr(sys, "argv", ["llmbench", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    return int(exc.value.code or 0), capsys.readouterr().err


def assert_no_secret(out: Path) -> None:
    for f in out.rglob("*"):
        if f.is_file():
            assert TOKEN not in f.read_text(errors="replace"), f


# ------------------------------------------------------------------------------ without a cluster


def test_node_kinds_one_per_gpu_type_and_cpu_runs_over_every_node() -> None:
    nodes = [{"Alive": True, "Resources": {"CPU": 32.0, "GPU": 2.0, "accelerator_type:H100": 1.0}},
             {"Alive": True, "Resources": {"CPU": 16.0, "GPU": 8.0, "accelerator_type:H100": 1.0}},
             {"Alive": True, "Resources": {"CPU": 8.0, "GPU": 1.0, "accelerator_type:A10G": 1.0}},
             {"Alive": True, "Resources": {"CPU": 4.0}},
             {"Alive": False, "Resources": {"CPU": 4.0, "GPU": 4.0, "accelerator_type:L4": 1.0}}]
    assert node_kinds(nodes, cpu=False) == [NodeKind("A10G", 1, 8.0, 1), NodeKind("H100", 8, 16.0, 2)]
    assert node_kinds(nodes, cpu=True) == [NodeKind(None, 0, 4.0, 4)]
    assert node_kinds(nodes[3:4], cpu=False) == [NodeKind(None, 0, 4.0, 1)]  # no GPU: a CPU run
    assert NodeKind("H100", 8, 16.0, 2).resources() == {"accelerator_type:H100": 0.001}
    assert NodeKind(None, 0, 4.0, 1).resources() == {}


def test_a_task_gets_the_multicast_variables_and_llmbench_settings_only() -> None:
    env = {"PATH": "/x", "RAY_AUTH_TOKEN": "t", "LLMBENCH_PLUGINS": "p", "LLMBENCH_CASE_TOKEN": "c",
           "NVSHMEM_DISABLE_NVLS": "yes", "HF_TOKEN": "h"}
    got = forwarded_env(env, {"LLMBENCH_CEILINGS": "/c.json", "MY_VAR": "1"})
    assert got == {"LLMBENCH_PLUGINS": "p", "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                   "NVSHMEM_DISABLE_NVLS": "yes", "LLMBENCH_CEILINGS": "/c.json", "MY_VAR": "1"}
    assert forwarded_env({"NCCL_NVLS_ENABLE": "1"}, {})["NCCL_NVLS_ENABLE"] == "1"  # the user's own choice


def test_a_task_asks_for_its_placement_and_an_exclusive_one_for_the_whole_node() -> None:
    h100 = RayLauncher(NodeKind("H100", 8, 16.0, 2), {"X": "1"})
    plain = h100.options({"gpus": 2}, {})
    assert (plain["num_gpus"], plain["num_cpus"], plain["resources"]) == (2, 1, {"accelerator_type:H100": 0.001})
    assert plain["max_retries"] == 0 and plain["runtime_env"]["env_vars"]["X"] == "1"
    assert h100.options({"gpus": 1, "exclusive": True}, {})["num_cpus"] == 16.0  # every CPU of the smallest node
    assert RayLauncher(NodeKind(None, 0, 2.0, 1)).options({"gpus": 2}, {})["num_gpus"] == 0  # a CPU run
    assert "at most 8" in (h100.unplaceable({"gpus": 16}) or "") and h100.unplaceable({"gpus": 8}) is None


def test_without_ray_the_launcher_names_the_install_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str],
                                                            fault_plugin: str) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(UserError, match=r"pip install 'llmbench\[ray\]'"):
        import_ray()
    code, err = cli(["run", str(suite(tmp_path, ["ok"])), "--launcher", "ray", "--cpu", "--out", str(tmp_path / "out")],
                    monkeypatch, capsys)
    assert code == 2 and "pip install 'llmbench[ray]'" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.json"))


def test_launcher_choices_and_what_goes_with_them() -> None:
    ray = launcher_options({"name": "ray", "address": "auto"})
    check_launcher(ray, None)
    with pytest.raises(UserError, match="unknown launcher 'slurm'; valid: local, ray"):
        launcher_options({"name": "slurm"})
    with pytest.raises(UserError, match="launcher 'local' has no option 'address'; valid options: none"):
        launcher_options({"name": "local", "address": "h:1"})
    for (gpus, repeat, parallel), words in [(("0,1", 1, False), "Ray gives each case its GPUs"),
                                            ((None, 3, False), "--launcher ray: --repeat is not supported"),
                                            ((None, 1, True), "--launcher ray: --parallel is not built yet")]:
        with pytest.raises(UserError, match=words):
            check_launcher(ray, gpus, repeat, parallel)


def test_credentials_in_an_address_or_from_ray_never_show() -> None:
    assert head_endpoint("ray://alice:s3cret@head.example:10001") == ("head.example", 10001)
    assert head_endpoint("10.0.0.1") == ("10.0.0.1", 6379)
    assert redact("ray://alice:s3cret@head:10001") == "ray://***@head:10001"
    assert "abcdefgh12345" not in redact("metadata authorization: Bearer abcdefgh12345")
    assert redact("a bearer of news") == "a bearer of news"
    assert lost_reason(RuntimeError("\nworker died\nmore")).endswith("(RuntimeError): worker died")


# ------------------------------------------------------------------------------ against a local cluster


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.ray
def test_a_head_that_does_not_answer_stops_the_run_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 fault_plugin: str) -> None:
    _require_ray()
    out = tmp_path / "out"
    address = f"ray://alice:s3cret@127.0.0.1:{free_port()}"  # nothing listens there
    code, err = cli(["run", str(suite(tmp_path, ["ok"])), "--launcher", "ray", "--address", address, "--cpu",
                     "--out", str(out)], monkeypatch, capsys)
    assert code == 2, err
    assert "no Ray head answers at 127.0.0.1" in err and "s3cret" not in err and "***@" in err
    assert len(err.strip().splitlines()) == 1, err
    assert not list(out.rglob("*.json"))


@pytest.mark.ray
@pytest.mark.slow
def test_a_suite_over_ray_is_the_local_launchers_in_shape(cluster: Any, tmp_path: Path, pids: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVSHMEM_DISABLE_NVLS", "yes")  # set after the cluster started: only runtime_env carries it
    path = suite(tmp_path, ["ok", "env", "exit"])
    heard = _Progress()
    over_ray = load(run(path, tmp_path / "ray", heard))
    assert heard.lines  # the case process's progress lines came back through the task
    local = load(api.run_suite(path, out=tmp_path / "local", cpu=True).path)
    assert [(c.id, c.status, sorted(c.metrics)) for c in over_ray.cases] == \
        [(c.id, c.status, sorted(c.metrics)) for c in local.cases]
    node = cluster.nodes()[0]
    for case in over_ray.cases:
        assert case.info["launcher"] == "ray" and local.case(case.id).info["launcher"] == "local"
        assert {k: case.info["node"][k] for k in ("id", "hostname")} == {"id": node["NodeID"],
                                                                         "hostname": socket.gethostname()}
    env = next(c for c in over_ray.cases if c.params["kind"] == "env").info
    assert env["multicast"] == {**MULTICAST_OFF_ENV, "NVSHMEM_DISABLE_NVLS": "yes"}  # the machine's value kept
    crashed = over_ray.case(next(c.id for c in over_ray.cases if c.params["kind"] == "exit"))
    assert crashed.status == "failed" and crashed.reason == "the case process exited with code 3 without a result"
    assert over_ray.env["gpu"]["slug"] == local.env["gpu"]["slug"]  # the fingerprint taken on the node
    assert_no_secret(tmp_path / "ray")


@pytest.mark.ray
@pytest.mark.slow
def test_a_case_past_its_timeout_is_stopped_with_everything_it_started(cluster: Any, tmp_path: Path,
                                                                        pids: Path) -> None:
    path = write(tmp_path, f'name = "slow"\n{FAST}[[case]]\nscenario = "fault"\nkind = "sleep"\nseconds = 300\n'
                 'detach_child = true\ntimeout_s = 8\n[[case]]\nscenario = "fault"\nkind = "ok"\n', "slow.toml")
    rs = load(run(path, tmp_path / "out"))
    assert [c.status for c in rs.cases] == ["timeout", "ok"]
    assert "did not finish within its timeout of 8s" in (rs.cases[0].reason or "")
    assert wait_gone(case_pids(pids) + case_pids(pids, ".child"), 15)


@pytest.mark.ray
@pytest.mark.slow
def test_a_killed_ray_worker_fails_its_case_and_the_run_goes_on(cluster: Any, tmp_path: Path, pids: Path) -> None:
    path = suite(tmp_path, ["sleep", "ok"], seconds=300)

    def kill_the_worker() -> None:
        case = wait_for(pids, ".pid")
        worker = int(Path(f"/proc/{case}/stat").read_text().rsplit(")", 1)[1].split()[1])  # its parent
        os.kill(worker, 9)

    threading.Thread(target=kill_the_worker, daemon=True).start()
    rs = load(run(path, tmp_path / "out"))
    assert [c.status for c in rs.cases] == ["failed", "ok"]
    assert (rs.cases[0].reason or "").startswith("the Ray task running the case was lost")
    assert wait_gone(case_pids(pids), 15)  # the case process stopped itself with its runner gone


class _Progress(SessionUI):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def case_progress(self, fraction: float, text: str) -> None:
        self.lines.append(text)


class _InterruptAt(SessionUI):
    """Ctrl-C once the `sleep` case's process is up (as a person would, mid-case)."""

    def __init__(self, pids: Path) -> None:
        self.pids = pids

    def case_start(self, case: CaseSpec, index: int) -> None:
        if case.params_dict.get("kind") == "sleep":
            def interrupt() -> None:
                wait_for(self.pids, ".pid")
                os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C: it also wakes a main thread blocked in a call

            threading.Thread(target=interrupt, daemon=True).start()


@pytest.mark.ray
@pytest.mark.slow
def test_an_interrupt_cancels_the_task_keeps_what_finished_and_resume_finishes(cluster: Any, tmp_path: Path,
                                                                               pids: Path) -> None:
    path = suite(tmp_path, ["ok", "sleep", "env"], seconds=6)
    out = tmp_path / "out"
    # Ctrl-C raises KeyboardInterrupt also where this test runs in a background job (which starts with
    # SIGINT ignored, so Python installs no handler of its own)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run(path, out, _InterruptAt(pids))
    finally:
        signal.signal(signal.SIGINT, previous)
    (kept,) = out.rglob("overray-*.json")
    first = load(kept)
    assert [c.status for c in first.cases] == ["ok"]  # finished before the interrupt; nothing else recorded
    case = case_pids(pids)
    assert wait_gone(case, 15), [p for p in case if alive(p)]
    assert run(path, out, resume=True) == kept
    resumed = load(kept)
    assert [c.status for c in resumed.cases] == ["ok", "ok", "ok"]
    assert resumed.cases[0].started_at == first.cases[0].started_at  # not run again
