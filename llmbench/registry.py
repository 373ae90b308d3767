"""A small decorator registry: a new scenario or engine is one new module, no if/elif on names."""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
PLUGINS_ENV = "LLMBENCH_PLUGINS"


class PluginError(Exception):
    """A module named in LLMBENCH_PLUGINS that cannot be imported: bad input, so the CLI exits 2 (this
    layer cannot import `errors.UserError`; the CLI catches both)."""

    exit_code = 2


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
            first = self._items.get(name)
            if first is not None and first is not cls:  # a plugin's name clash is bad input: exit 2, both named
                raise PluginError(f"{self.kind} {name!r} is registered twice: by {first.__module__} and by "
                                  f"{cls.__module__}; a plugin must pick a name of its own")
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
        for name in filter(None, (n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(","))):
            try:
                importlib.import_module(name)
            except ImportError as e:
                raise PluginError(f"{PLUGINS_ENV}: cannot import plugin module {name!r} ({e}); a plugin must be an "
                                "importable module name (dotted, no .py), e.g. a module on PYTHONPATH or an "
                                "installed package") from None
            except PluginError as e:  # a name it registers twice
                raise PluginError(f"{PLUGINS_ENV}: plugin module {name!r}: {e}") from None
            except (Exception, SystemExit) as e:  # its own bug, or a sys.exit() at import: never a silent end
                what = f"sys.exit({e.code!r})" if isinstance(e, SystemExit) else f"{type(e).__name__}: {e}"
                raise PluginError(f"{PLUGINS_ENV}: plugin module {name!r} failed at import ({what}); fix the plugin "
                                  f"or leave it out of {PLUGINS_ENV}") from None

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
