"""The served-engine interface: an engine that runs as a server the case starts, asks for health, and
stops, at a URL (the serving scenario loads it over HTTP). A served engine builds its server's command
line from typed options (`ServeOptions`, subclassed per engine), so a suite says `engine = "vllm"` and
`engine_options = {max_model_len = 4096}` rather than a command line; `CommandServer` runs any other
server from a raw command with placeholders.
"""

from __future__ import annotations

import sys
from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from llmbench import precision as prec
from llmbench.engines.base import Engine
from llmbench.precision import DeviceInfo
from llmbench.serving.server import ServerProcess, answers, fill


class ServeOptions(BaseModel):
    """How a served engine runs: what every server has. `precision` and `tensor_parallel` come from the
    case (its precision and n_gpus); an engine's subclass adds its own settings, which a suite gives as
    `engine_options` (unknown keys are errors)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    case_fields: ClassVar[frozenset[str]] = frozenset({"precision", "tensor_parallel"})

    precision: str = "bf16"
    tensor_parallel: int = Field(1, ge=1, description="GPUs the server shards the model over")
    max_model_len: int | None = Field(None, ge=1, description="longest prompt + output; None: the model's limit")


@dataclass(frozen=True)
class ServerSite:
    """Where a server listens and what it serves, as the scenario lays it out for this case."""

    host: str
    port: int
    model: str  # the name requests ask for; also what is loaded when there is no model_dir
    tokenizer_dir: str
    model_dir: str | None = None  # a preset's config dir (random weights); None: `model` is a hub id or path
    python: str = field(default=sys.executable)

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
    Options: ClassVar[type[ServeOptions]] = ServeOptions
    precisions: ClassVar[frozenset[str]] = frozenset({"bf16"})

    def __init__(self, options: ServeOptions | None = None) -> None:
        self.options = options if options is not None else self.Options.model_validate({})
        self.site: ServerSite | None = None
        self.process: ServerProcess | None = None

    @classmethod
    def serve_reason(cls, options: ServeOptions, device: DeviceInfo) -> str | None:
        """Why this server cannot run here with `options` (not installed, a precision it cannot run or
        this device cannot); None if it can. Asked before anything starts."""
        missing = cls.missing_reason()
        if missing:
            return missing
        if options.precision not in cls.precisions:
            return (f"engine {cls.name!r} cannot serve precision {options.precision!r}; valid: "
                    f"{', '.join(sorted(cls.precisions))}")
        return prec.device_reason(options.precision, device)

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
        self.process = ServerProcess(self.command(site), log, env, detach=detach)
        return self.process

    def start(self, site: ServerSite, log: Path, env: dict[str, str] | None = None) -> None:
        self.server(site, log, env).start()

    @property
    def url(self) -> str:
        if self.site is None:
            raise RuntimeError(f"engine {self.name!r} has not been started")
        return self.site.url

    def health(self) -> bool:
        """Whether the server answers 200 on /health or /v1/models now."""
        return answers(self.url)

    def wait_ready(self, timeout_s: float) -> float:
        """Seconds until the started server answered; an error with its log's end if it exited or did not."""
        if self.process is None:
            raise RuntimeError(f"engine {self.name!r} has not been started")
        return self.process.wait_ready(self.url, timeout_s)

    def stop(self) -> int | None:
        """Stop the server and its process group; its exit code (None if it never started)."""
        return self.process.stop() if self.process is not None else None


class CommandServer(ServedEngine):
    """Any OpenAI-compatible server from a raw command line with placeholders ({python} {host} {port}
    {model} {model_dir} {tokenizer_dir}); a suite's `server = [...]`. Not registered: it has no name a
    suite could give, only its command."""

    name = "command"
    description = "a server started from a raw command line"

    def __init__(self, argv: list[str]) -> None:
        super().__init__()
        self.argv = list(argv)

    def wants_model_dir(self) -> bool:
        return any("{model_dir}" in a for a in self.argv)

    def command(self, site: ServerSite) -> list[str]:
        return fill(self.argv, site.values())

    @classmethod
    def module(cls, argv: list[str]) -> str | None:
        """The module of a `{python} -m module ...` command (to say when it is not installed)."""
        return argv[2] if len(argv) >= 3 and argv[1] == "-m" and "python" in argv[0] else None
