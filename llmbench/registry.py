"""A small decorator registry: a new scenario or engine is one new module, no if/elif on names."""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
PLUGINS_ENV = "LLMBENCH_PLUGINS"


class Registry(Generic[T]):
    """Maps a public name to a class. Modules of `package` are imported on first lookup, so a
    module that registers itself with `@REGISTRY.register("name")` is all it takes to add one."""

    def __init__(self, kind: str, package: str) -> None:
        self.kind = kind
        self.package = package
        self._items: dict[str, type[T]] = {}
        self._loaded = False

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        def deco(cls: type[T]) -> type[T]:
            if name in self._items and self._items[name] is not cls:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = cls
            cls.name = name  # type: ignore[attr-defined]
            return cls

        return deco

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        pkg = importlib.import_module(self.package)
        for mod in pkgutil.iter_modules(pkg.__path__):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{self.package}.{mod.name}")
        # Plugins: modules outside the package that register more (LLMBENCH_PLUGINS=a.b,c.d).
        for name in filter(None, os.environ.get(PLUGINS_ENV, "").split(",")):
            importlib.import_module(name.strip())

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)

    def get(self, name: str) -> type[T]:
        self._load()
        try:
            return self._items[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; valid: {', '.join(self.names())}") from None

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def __iter__(self) -> Iterator[tuple[str, type[T]]]:
        self._load()
        return iter(sorted(self._items.items()))
