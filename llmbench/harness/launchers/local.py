"""The local process launcher (`local`): one fresh `python -m llmbench.harness.worker` process per case
(harness/isolation.py), in its own process group, killed with what it started at the case's timeout.
A case whose scenario declares ranks starts them from inside this process through torchrun
(harness/launchers/torchrun.py); one of several replicas, its copies (replicas.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llmbench.harness.isolation import ChildOutcome, fingerprint, kill_running, run_case_process, run_group_process
from llmbench.harness.launchers.base import LAUNCHERS, Launcher, ProgressFn, node_record, with_node


@LAUNCHERS.register("local")
class IsolatedProcess(Launcher):
    """One fresh case process per case: GPU memory clean for every case, and a crash, an out-of-memory
    or a hang is that case's status while the suite goes on."""

    description = "each case its own process on this machine"

    def run(self, spec: dict[str, Any], env: dict[str, str], timeout_s: float,
            on_progress: ProgressFn | None = None) -> ChildOutcome:
        return with_node(run_case_process(spec, env, timeout_s, on_progress), node_record(env))

    def run_group(self, specs: list[dict[str, Any]], env: dict[str, str],
                  on_outcome: Callable[[int, ChildOutcome], None],
                  on_progress: ProgressFn | None = None,
                  on_warn: Callable[[str], None] | None = None) -> list[ChildOutcome]:
        """A share group in one fresh process of its own (the group's cases share it, no other case does)."""
        node = node_record(env)
        return run_group_process(specs, env, lambda i, o: on_outcome(i, with_node(o, node)), on_progress, on_warn)

    def stop_all(self) -> None:
        kill_running()

    def fingerprint(self, env: dict[str, str]) -> dict[str, Any]:
        """This machine's fingerprint, as a case process with `env` sees it."""
        return fingerprint(env)
