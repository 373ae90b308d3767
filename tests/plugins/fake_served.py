"""A test-only served engine: llmbench's fake OpenAI server (llmbench.serving.fake_server) started from
typed options, so a serving case with `engine = "fake-served"` runs a real server's lifecycle (start,
health, stop, URL) on any machine. Registered on import (in-process tests) or through LLMBENCH_PLUGINS."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from llmbench.engines.base import ENGINES, EngineOptions
from llmbench.engines.served import ServedEngine, ServeOptions, ServerSite


class FakeServeOptions(ServeOptions):
    itl_ms: float = Field(0.0, ge=0, description="the fake's time between tokens")


@ENGINES.register("fake-served")
class FakeServedEngine(ServedEngine):
    description = "test-only: the fake OpenAI server (fixed tokens at a set pace)"
    ServedOptions: ClassVar[type[EngineOptions]] = FakeServeOptions
    precisions = frozenset({"bf16", "fp8"})

    def wants_model_dir(self) -> bool:
        return False  # the fake loads no model

    def command(self, site: ServerSite) -> list[str]:
        assert isinstance(self.options, FakeServeOptions)
        return [site.python, "-m", "llmbench.serving.fake_server", "--host", site.host, "--port", str(site.port),
                "--model", site.model, "--itl-ms", str(self.options.itl_ms)]
