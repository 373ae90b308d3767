"""The engine base class and registry. An engine that is not installed makes its cases `skipped`
with the install command in the reason."""

from __future__ import annotations

import importlib.util
from typing import ClassVar

from llmbench.registry import Registry


class Engine:
    name: ClassVar[str]
    description: ClassVar[str] = ""
    packages: ClassVar[tuple[str, ...]] = ()  # import names it needs
    install: ClassVar[str] = ""  # e.g. "pip install 'llmbench[vllm]'"

    @classmethod
    def missing_reason(cls) -> str | None:
        """None when the engine can be imported here; otherwise why not and how to install it."""
        missing = [p for p in cls.packages if importlib.util.find_spec(p) is None]
        if missing:
            return f"engine {cls.name!r} needs {', '.join(missing)}, which is not installed: {cls.install}"
        return None


ENGINES: Registry[Engine] = Registry("engine", "llmbench.engines")
