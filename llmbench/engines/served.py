"""The served-engine interface: an engine that runs as a server the case starts, asks for health, and
stops, at a URL (the serving scenario loads it over HTTP). A served engine builds its server's command
line from typed options (`ServeOptions`, subclassed per engine), so a suite says `[engine] name = "vllm",
max_model_len = 4096` rather than a command line; the `command` engine runs any other server from a raw
command with placeholders, and the `url` engine is a server already running elsewhere.
"""

from __future__ import annotations

import os
import sys
from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from llmbench import precision as prec
from llmbench.engines.base import Engine, EngineOptions
from llmbench.hardware.topology import multicast_wanted
from llmbench.precision import DeviceInfo
from llmbench.serving.server import READY_PATHS, ServerProcess, answers


def multicast_off(tensor_parallel: int) -> bool:
    """Whether a TP engine must keep NVLink multicast off: unless the environment asks for it."""
    return tensor_parallel > 1 and not multicast_wanted(os.environ)


class ServeOptions(EngineOptions):
    """How a served engine runs: what every server has; an engine's subclass adds its own settings.
    `tensor_parallel` is the case's placement (its GPUs), checked against it."""

    tensor_parallel: int = Field(1, ge=1, description="GPUs the server shards the model over (the case's placement)")
    server_env: dict[str, str] | None = Field(None, description="environment variables added for the server")
    ready_timeout_s: float = Field(900.0, gt=0, description="how long a started server may take to answer")
    server_scope: Literal["case", "suite"] = Field(
        "case", description="case: a server started and stopped per case; suite: started by the first case "
        "and kept for the next cases with the same server (a sweep pays one start; turn off the server's "
        "prefix cache, since every point sends prompts of the same seed), stopped when the suite ends")

    def server_record(self) -> dict[str, Any]:
        """The server's part of a serving case's params, as the serving scenario's params held them."""
        return {"url": None, "server": None, "server_env": self.server_env, "ready_timeout_s": self.ready_timeout_s,
                **({"server_scope": self.server_scope} if self.server_scope != "case" else {})}

    def record(self) -> dict[str, Any]:
        own = self.model_dump(mode="json", exclude_unset=True, exclude=set(ServeOptions.model_fields))
        return {**self.server_record(), "engine": self.name, **({"engine_options": own} if own else {})}


@dataclass(frozen=True)
class ServerSite:
    """Where a server listens and what it serves, as the scenario lays it out for this case."""

    host: str
    port: int
    model: str  # the name requests ask for; also what is loaded when there is no model_dir
    tokenizer_dir: str
    model_dir: str | None = None  # a preset's config dir (random weights); None: `model` is a hub id or path
    python: str = field(default=sys.executable)
    precision: str = "bf16"  # what a served engine that builds its command runs (the case's precision)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def values(self) -> dict[str, str]:
        """The placeholders of a raw server command ({model_dir} only where there is one)."""
        out = {"python": self.python, "host": self.host, "port": str(self.port), "model": self.model,
               "tokenizer_dir": self.tokenizer_dir}
        return out | ({"model_dir": self.model_dir} if self.model_dir is not None else {})


class ServedEngine(Engine):
    """A server: `command(site)` from typed options; `start` runs it, `health` asks it, `stop` ends it,
    `url` is where it listens. The process handling (own process group, log file, readiness, stopping
    its whole group) is llmbench.serving.server's."""

    kind = "served engine"
    options_attr: ClassVar[str] = "ServedOptions"
    ServedOptions: ClassVar[type[EngineOptions]] = ServeOptions
    # the precisions it serves (it builds the command that sets them); empty: the command sets its own
    precisions: ClassVar[frozenset[str]] = frozenset()
    starts: ClassVar[bool] = True  # the case starts it (a server already running elsewhere does not)
    # where a 200 means it is ready: a server whose model list answers before it has warmed up names
    # only the path that waits for that
    ready_paths: ClassVar[tuple[str, ...]] = READY_PATHS
    options: ServeOptions

    def __init__(self, options: EngineOptions | None = None) -> None:
        self.options = options if isinstance(options, ServeOptions) else self.ServedOptions(name=self.name)  # type: ignore[assignment]
        self.site: ServerSite | None = None
        self.process: ServerProcess | None = None

    def serve_reason(self, precision: str | None, device: DeviceInfo) -> str | None:
        """Why this server cannot run here (not installed, a precision it cannot run or this device
        cannot); None if it can. Asked before anything starts."""
        missing = self.missing_reason()
        if missing or not self.precisions:
            return missing
        if precision not in self.precisions:
            return (f"engine {self.name!r} cannot serve precision {precision!r}; valid: "
                    f"{', '.join(sorted(self.precisions))}")
        return prec.device_reason(precision, device)

    def gpus(self, placed: int) -> int:
        """The GPUs the server runs on (per-GPU figures): the case's, where the case starts it."""
        return placed

    def wants_model_dir(self) -> bool:
        """Whether the server loads a preset's config dir (written by the scenario) when there is one."""
        return True

    @abstractmethod
    def command(self, site: ServerSite) -> list[str]:
        """The server's command line for `site`, from self.options."""

    def server(self, site: ServerSite, log: Path, env: dict[str, str] | None = None,
               detach: bool = False) -> ServerProcess:
        """The server's process at `site`, not started yet (a suite's shared server is started by
        llmbench.serving.server.shared_server, which decides whether to start one at all)."""
        self.site = site
        self.process = ServerProcess(self.command(site), log, env, detach=detach, ready_paths=self.ready_paths)
        return self.process

    def start(self, site: ServerSite, log: Path, env: dict[str, str] | None = None) -> None:
        self.server(site, log, env).start()

    @property
    def url(self) -> str:
        if self.site is None:
            raise RuntimeError(f"engine {self.name!r} has not been started")
        return self.site.url

    def health(self) -> bool:
        """Whether the server answers 200 on one of its ready paths now."""
        return answers(self.url, self.ready_paths)

    def wait_ready(self, timeout_s: float) -> float:
        """Seconds until the started server answered; an error with its log's end if it exited or did not."""
        if self.process is None:
            raise RuntimeError(f"engine {self.name!r} has not been started")
        return self.process.wait_ready(self.url, timeout_s)

    def stop(self) -> int | None:
        """Stop the server and its process group; its exit code (None if it never started)."""
        return self.process.stop() if self.process is not None else None
