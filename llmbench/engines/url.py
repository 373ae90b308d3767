"""The `url` served engine: an OpenAI-compatible server already running elsewhere, loaded at its URL and
never started or stopped by the case (`[engine] name = "url", url = "http://host:8000"`; the serving
params' `url` before). `n_gpus`: the GPUs it runs on, for per-GPU figures (the case holds none of them)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from llmbench.engines.base import ENGINES, EngineOptions
from llmbench.engines.served import ServedEngine, ServeOptions, ServerSite


class UrlOptions(ServeOptions):
    url: str = Field(..., description="base URL of the running server, http://host:port")
    n_gpus: int = Field(1, ge=1, description="GPUs the server runs on, for per-GPU throughput")

    def record(self) -> dict[str, Any]:
        return {**self.server_record(), "url": self.url, "n_gpus": self.n_gpus}


@ENGINES.register("url")
class RunningServer(ServedEngine):
    description = "a server already running at a URL (started and stopped by someone else)"
    ServedOptions: ClassVar[type[EngineOptions]] = UrlOptions
    starts = False
    options: UrlOptions

    def gpus(self, placed: int) -> int:
        return self.options.n_gpus

    def command(self, site: ServerSite) -> list[str]:
        raise RuntimeError("a running server is not started: it has no command")

    @property
    def url(self) -> str:
        return self.options.url
