"""What every launcher is: `run(spec, env, timeout_s) -> ChildOutcome`, never raising for what happened
to the processes it started (a crash, an out-of-memory, a hang stopped at the timeout: each is an
outcome with its reason); an interrupt still propagates, after what it started is stopped.

`spec` says what runs (a case's worker spec with its placement; a rank run's entry, rank count and
spec); `env` is where: the environment of the GPUs granted (`launch.SlotGrant.env` for a case, the case
process's own for its ranks). `name` is what a case's `info.launcher` records."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from llmbench.harness.isolation import ChildOutcome

ProgressFn = Callable[[float, str], None]


class Launcher(Protocol):
    """Runs a spec with `env` under a timeout; whatever happened comes back as an outcome."""

    name: str

    def run(self, spec: dict[str, Any], env: dict[str, str], timeout_s: float,
            on_progress: ProgressFn | None = None) -> ChildOutcome: ...


class CaseLauncher(Launcher, Protocol):
    """A launcher the runner runs its cases through (harness/runner.py): also share groups, and a stop."""

    def run_group(self, specs: list[dict[str, Any]], env: dict[str, str],
                  on_outcome: Callable[[int, ChildOutcome], None],
                  on_progress: ProgressFn | None = None,
                  on_warn: Callable[[str], None] | None = None) -> list[ChildOutcome]:
        """Run a share group's cases one after another where they share what they load; each outcome
        goes to `on_outcome` as it ends; the list ends at the first case that did not end ok or
        skipped (the runner runs the rest alone). `on_warn` hears what the person watching should know
        (a session that did not close in time)."""

    def stop_all(self) -> None:
        """Stop every case still running (an interrupt of a parallel run, whose waits are in threads)."""

    def fingerprint(self, env: dict[str, str]) -> dict[str, Any]:
        """The environment fingerprint where its cases run (the result set's `env`; its GPU slug names
        the set's folder), as a case process with `env` sees it."""
