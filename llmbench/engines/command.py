"""The `command` served engine: any OpenAI-compatible server started from a raw command line with
placeholders ({python} {host} {port} {model} {model_dir} {tokenizer_dir}), for a server llmbench has no
engine of its own for (`[engine] name = "command", command = [...]`; the serving params' `server` before)."""

from __future__ import annotations

import importlib.util
from typing import Any, ClassVar

from pydantic import Field

from llmbench.engines.base import ENGINES, EngineOptions
from llmbench.engines.served import ServedEngine, ServeOptions, ServerSite
from llmbench.precision import DeviceInfo
from llmbench.serving.server import fill


class CommandOptions(ServeOptions):
    command: list[str] = Field(..., min_length=1, description="the server's command line, with placeholders")

    def record(self) -> dict[str, Any]:
        return {**self.server_record(), "server": self.command}


@ENGINES.register("command")
class CommandServer(ServedEngine):
    description = "a server started from a raw command line with placeholders"
    ServedOptions: ClassVar[type[EngineOptions]] = CommandOptions
    options: CommandOptions

    def wants_model_dir(self) -> bool:
        return any("{model_dir}" in a for a in self.options.command)

    def command(self, site: ServerSite) -> list[str]:
        return fill(self.options.command, site.values())

    def serve_reason(self, precision: str | None, device: DeviceInfo) -> str | None:
        """A `{python} -m module ...` command whose module is not installed here cannot start."""
        argv = self.options.command
        module = argv[2] if len(argv) >= 3 and argv[1] == "-m" and "python" in argv[0] else None
        if module and importlib.util.find_spec(module.split(".")[0]) is None:
            return f"the server module {module} is not installed here ({module.split('.')[0]} is missing)"
        return None
