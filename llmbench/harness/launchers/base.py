"""What every launcher is, its options and the registry a run picks one from by name (`--launcher`, a
suite's [launcher] table): a new launcher is one module here that registers itself.

`run(spec, env, timeout_s) -> ChildOutcome` never raises for what happened to the processes it started
(a crash, an out-of-memory, a hang stopped at the timeout: each is an outcome with its reason); an
interrupt still propagates, after what it started is stopped. `spec` is a case's worker spec with its
placement; `env` is where it runs (`launch.SlotGrant.env`). `name` is what a case's `info.launcher`
records, `node_record` its `info.node`: where its process ran, the same record for every launcher."""

from __future__ import annotations

import socket
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

from llmbench.caseinfo import NodeInfo
from llmbench.harness.isolation import ChildOutcome
from llmbench.registry import Registry

ProgressFn = Callable[[float, str], None]


class LauncherOptions(BaseModel):
    """A run's launcher and its own settings, validated by the model the launcher declares (`Options`):
    an unknown key is an error, a value is read as its field's type (from a suite or `--launcher-option`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "local"


class Launcher(Protocol):
    """Runs a case (or a share group) with `env` under a timeout; whatever happened comes back as an outcome."""

    name: ClassVar[str] = ""  # set by LAUNCHERS.register
    Options: ClassVar[type[LauncherOptions]] = LauncherOptions
    description: ClassVar[str] = ""  # one clause for `llmbench run --help`

    def run(self, spec: dict[str, Any], env: dict[str, str], timeout_s: float,
            on_progress: ProgressFn | None = None) -> ChildOutcome: ...

    def run_group(self, specs: list[dict[str, Any]], env: dict[str, str],
                  on_outcome: Callable[[int, ChildOutcome], None],
                  on_progress: ProgressFn | None = None,
                  on_warn: Callable[[str], None] | None = None) -> list[ChildOutcome]:
        """Run a share group's cases one after another where they share what they load; each outcome
        goes to `on_outcome` as it ends; the list ends at the first case that did not end ok or
        skipped (the runner runs the rest alone). `on_warn` hears what the person watching should know."""

    def stop_all(self) -> None:
        """Stop every case still running (an interrupt of a parallel run, whose waits are in threads)."""

    def fingerprint(self, env: dict[str, str]) -> dict[str, Any]:
        """The environment fingerprint where its cases run (the result set's `env`; its GPU slug names the
        set's folder), as a case process with `env` sees it."""

    @classmethod
    def refusal(cls, options: Any, gpus: str | None, repeat: int, parallel: bool) -> str | None:
        """Why this launcher cannot take a run of these settings (one line); None where it can."""
        return None

    @classmethod
    def opened(cls, options: Any, cpu: bool, extra_env: dict[str, str]) -> AbstractContextManager[list[Launcher]]:
        """The launchers of a run, one per result set it writes, ready for the run and closed after it."""
        return nullcontext([cls()])


LAUNCHERS: Registry[Launcher] = Registry("launcher", "llmbench.harness.launchers")


def node_record(env: dict[str, str], node_id: str | None = None) -> dict[str, Any]:
    """Where a case process with `env` runs (`caseinfo.NodeInfo`): this host, the GPUs `env` gives it
    (None: every GPU of the host) and a cluster's own id of the node."""
    node = NodeInfo(id=node_id, hostname=socket.gethostname(), gpus=env.get("CUDA_VISIBLE_DEVICES"))
    return node.model_dump(exclude_none=True)


def with_node(out: ChildOutcome, node: dict[str, Any]) -> ChildOutcome:
    """`out` with where its case ran in its info (`info.node`)."""
    if node:
        out.payload.setdefault("info", {})["node"] = node
    return out
