"""A small decorator registry, lazy per entry: a new scenario or engine is one new module, no if/elif on
names, and a lookup imports only the module of the entry it names."""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import re
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from llmbench.errors import choices_hint

T = TypeVar("T")
PLUGINS_ENV = "LLMBENCH_PLUGINS"
ENTRY_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


class PluginError(Exception):
    """A module named in LLMBENCH_PLUGINS that cannot be imported: bad input, so the CLI exits 2 (this
    layer cannot import `errors.UserError`; the CLI catches both)."""

    exit_code = 2


class Registry(Generic[T]):
    """Maps a public name to a class. The entry `name` of the package is its module `package.name` ('-'
    read as '_'), imported on the first lookup of that name, as lm-evaluation-harness maps model names to
    modules: a module that registers itself with `@REGISTRY.register("name")` is all it takes to add one,
    and looking one up imports no other. Listing every name imports every module of the package. Modules
    named in LLMBENCH_PLUGINS=a.b,c.d register more; they are imported on the registry's first use."""

    def __init__(self, kind: str, package: str) -> None:
        self.kind = kind
        self.package = package
        self._items: dict[str, type[T]] = {}
        self._loaded = False  # the plugins are imported (tests reset it to import them again)
        self._scanned = False  # every module of the package is imported

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

    def _import_entry(self, name: str) -> None:
        """Import the package's module of the entry `name`, if there is one."""
        if not ENTRY_NAME.fullmatch(name):
            return
        module = f"{self.package}.{name.replace('-', '_')}"
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module)

    def _load(self) -> None:
        """Import the plugins (modules outside the package that register more), once."""
        if self._loaded:
            return
        self._loaded = True
        for name in filter(None, (n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(","))):
            before = set(self._items)
            try:
                importlib.import_module(name)
                for entry in set(self._items) - before:  # the package's own entry of that name clashes
                    self._import_entry(entry)
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

    def _find(self, name: object) -> type[T] | None:
        self._load()
        if isinstance(name, str) and name not in self._items:
            self._import_entry(name)
        return self._items.get(name) if isinstance(name, str) else None

    def _scan(self, plugins: bool = True) -> None:
        if plugins:
            self._load()
        if not self._scanned:
            self._scanned = True
            pkg = importlib.import_module(self.package)
            for mod in pkgutil.iter_modules(pkg.__path__):
                if not mod.name.startswith("_"):
                    importlib.import_module(f"{self.package}.{mod.name}")

    def names(self) -> list[str]:
        self._scan()
        return sorted(self._items)

    def own(self) -> list[tuple[str, type[T]]]:
        """The package's own entries, no plugin imported: what help text lists, read as the CLI starts
        (a broken plugin is a command's one-line error, later)."""
        self._scan(plugins=False)
        return sorted((n, c) for n, c in self._items.items() if c.__module__.startswith(f"{self.package}."))

    def get(self, name: str) -> type[T]:
        found = self._find(name)
        if found is None:
            raise KeyError(f"unknown {self.kind} {name!r}; {choices_hint(name, self.names())}")
        return found

    def __contains__(self, name: object) -> bool:
        return self._find(name) is not None

    def __iter__(self) -> Iterator[tuple[str, type[T]]]:
        self._scan()
        return iter(sorted(self._items.items()))
