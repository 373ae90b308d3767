"""Launchers as an axis (harness/launchers/base.py, choose.py): a run picks one by name from the registry,
its options read by the launcher's own model from the suite's [launcher] table and the command line (the
command line's over the suite's), anything unknown one line naming the valid choices; a new launcher is one
class that registers itself, and a suite runs through it with nothing else changed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmbench import api
from llmbench.cli import app, main
from llmbench.errors import UserError
from llmbench.hardware.fingerprint import cpu_slug
from llmbench.harness.isolation import ChildOutcome
from llmbench.harness.launchers.base import LAUNCHERS, Launcher, LauncherOptions
from llmbench.harness.launchers.choose import chosen_launcher, launcher_options, option_pairs
from llmbench.harness.launchers.ray import RayOptions
from llmbench.results import load
from llmbench.suite import load_suite
from tests.conftest import write


class StampOptions(LauncherOptions):
    stamp: str
    repeats: int = 1


class Stamp(Launcher):
    """A launcher of one class: runs no process, answers each case `skipped` with its options in the reason."""

    Options = StampOptions
    description = "a test launcher"

    def __init__(self, options: StampOptions) -> None:
        self.options = options

    @classmethod
    def opened(cls, options: Any, cpu: bool, extra_env: dict[str, str]) -> Any:
        return nullcontext([cls(options)])

    def run(self, spec: dict[str, Any], env: dict[str, str], timeout_s: float, on_progress: Any = None) -> ChildOutcome:
        return ChildOutcome("skipped", f"stamped {self.options.stamp} x{self.options.repeats}")

    def run_group(self, specs: list[dict[str, Any]], env: dict[str, str], on_outcome: Any, on_progress: Any = None,
                  on_warn: Any = None) -> list[ChildOutcome]:
        outs = [self.run(s, env, 0.0) for s in specs]
        for i, o in enumerate(outs):
            on_outcome(i, o)
        return outs

    def stop_all(self) -> None: ...

    def fingerprint(self, env: dict[str, str]) -> dict[str, Any]:
        # it runs nothing, so there is no case process to read an environment from: the CPU, named as such
        return {"gpu": {"name": "none (CPU)", "slug": cpu_slug(), "count": 0}}


@pytest.fixture
def stamp() -> Iterator[type[Stamp]]:
    LAUNCHERS.register("stamp")(Stamp)
    try:
        yield Stamp
    finally:
        LAUNCHERS._items.pop("stamp", None)


SUITE = '''name = "stamped"
LAUNCHER
[defaults]
min_iters = 1
[[case]]
scenario = "fault"
kind = "ok"
'''


def test_unknown_names_and_options_are_one_line_naming_the_valid_ones() -> None:
    with pytest.raises(UserError, match=r"^--launcher: unknown launcher 'rya'; did you mean 'ray'\? valid: local, "
                                        "ray$"):
        launcher_options({"name": "rya"})
    with pytest.raises(UserError, match=r"has no option 'adress'; did you mean 'address'\? valid options: address, "
                                        "nodes$"):
        launcher_options({"name": "ray", "adress": "h:1"})
    with pytest.raises(UserError, match=r"launcher 'ray' option 'nodes': Input should be a valid integer"):
        launcher_options({"name": "ray", "nodes": "two"})
    with pytest.raises(UserError, match="give KEY=VALUE"):
        option_pairs(["address"])
    assert launcher_options({"name": "ray", "nodes": "2"}) == RayOptions(name="ray", nodes=2)  # typed from text
    assert launcher_options({}) == LauncherOptions(name="local")


def test_options_come_from_the_suite_and_the_command_line_over_it(tmp_path: Path, fault_plugin: str) -> None:
    s = load_suite(str(write(tmp_path, SUITE.replace("LAUNCHER", '[launcher]\nname = "ray"\nnodes = 3\n'
                                                     'address = "auto"'))))
    assert chosen_launcher(s.launcher, str(s.path)) == RayOptions(name="ray", address="auto", nodes=3)
    assert chosen_launcher(s.launcher, str(s.path), None, option_pairs(["address=h:6379"])) == \
        RayOptions(name="ray", address="h:6379", nodes=3)
    assert chosen_launcher(s.launcher, str(s.path), "local") == LauncherOptions(name="local")  # another's options go
    named = load_suite(str(write(tmp_path, SUITE.replace("LAUNCHER", 'launcher = "ray"'), "named.toml")))
    assert chosen_launcher(named.launcher, str(named.path)) == RayOptions(name="ray")
    bad = load_suite(str(write(tmp_path, SUITE.replace("LAUNCHER", '[launcher]\nname = "ray"\nnode = 2'), "bad.toml")))
    with pytest.raises(UserError, match=r"bad\.toml: \[launcher\]: launcher 'ray' has no option 'node'; did you mean "
                                        "'nodes'"):
        chosen_launcher(bad.launcher, str(bad.path), "local")  # wrong in the suite, whatever the command line says


def test_run_help_lists_the_registered_launchers() -> None:
    out = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    assert "local: each case its own process on this machine" in out and "ray: each case a Ray task" in out
    assert "--launcher-option" in out


def test_a_new_launcher_is_one_class_and_a_suite_runs_through_it(tmp_path: Path, stamp: type[Stamp],
                                                                  fault_plugin: str) -> None:
    assert "stamp" in LAUNCHERS.names()
    path = write(tmp_path, SUITE.replace("LAUNCHER", '[launcher]\nname = "stamp"\nstamp = "suite"'))
    (case,) = load(api.run_suite(path, out=tmp_path / "out", cpu=True).path).cases
    assert (case.status, case.reason, case.info["launcher"]) == ("skipped", "stamped suite x1", "stamp")
    over = api.chosen_launcher(load_suite(str(path)).launcher, str(path), None, {"repeats": "2"})
    (case,) = load(api.run_suite(path, out=tmp_path / "cli", cpu=True, launcher=over).path).cases
    assert case.reason == "stamped suite x2"
    with pytest.raises(UserError, match="launcher 'stamp' option 'stamp': Field required"):
        chosen_launcher(None, "", "stamp")


def test_the_command_line_names_the_bad_launcher_or_option_in_one_line(tmp_path: Path, fault_plugin: str,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write(tmp_path, SUITE.replace("LAUNCHER", "")))
    for args, words in [(["--launcher", "rya"], "did you mean 'ray'?"),
                        (["-L", "adress=h:1", "--launcher", "ray"], "did you mean 'address'?"),
                        (["--address", "h:1"], "launcher 'local' has no option 'address'")]:
        monkeypatch.setattr(sys, "argv", ["llmbench", "run", path, "--cpu", "--out", str(tmp_path / "out"), *args])
        with pytest.raises(SystemExit) as exc:
            main()
        err = capsys.readouterr().err
        assert exc.value.code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
