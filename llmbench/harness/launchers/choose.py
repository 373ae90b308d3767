"""Which launcher a run uses: the name and options of the command line (`--launcher`, `--launcher-option`,
`--address`) over a suite's [launcher] table, looked up in the registry (harness/launchers/base.py) and
read by that launcher's own options model; anything else is one line naming the valid choices."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from pydantic import ValidationError

from llmbench.errors import UserError, choices_hint
from llmbench.harness.launchers.base import LAUNCHERS, Launcher, LauncherOptions


def launcher_options(table: dict[str, Any], where: str = "--launcher") -> LauncherOptions:
    """`table` (a name and options) read by the options model of the launcher it names."""
    name = table.get("name", LauncherOptions().name)
    if name not in LAUNCHERS:
        raise UserError(f"{where}: unknown launcher {name!r}; {choices_hint(name, LAUNCHERS.names())}")
    model = LAUNCHERS.get(name).Options
    try:
        return model.model_validate(table)
    except ValidationError as e:
        err, valid = e.errors()[0], [f for f in model.model_fields if f != "name"]
        key = ".".join(str(x) for x in err["loc"])
        unknown = err["type"] == "extra_forbidden"
        what = f"has no option {key!r}" if unknown else f"option {key!r}: {err['msg']}"
        hint = choices_hint(key if unknown else None, valid, "valid options")
        raise UserError(f"{where}: launcher {name!r} {what}; {hint}") from None


def chosen_launcher(suite: dict[str, Any] | None = None, suite_where: str = "suite", name: str | None = None,
                    options: dict[str, Any] | None = None) -> LauncherOptions:
    """The run's launcher: the command line's `name` and `options` over the suite's table (whose options
    stay where the command line names no other launcher)."""
    table = dict(suite or {})
    if table:
        launcher_options(table, f"{suite_where}: [launcher]")
    if name is not None and name != table.get("name", LauncherOptions().name):
        table = {}
    return launcher_options({**table, **({"name": name} if name else {}), **(options or {})})


def option_pairs(pairs: list[str]) -> dict[str, str]:
    """`--launcher-option KEY=VALUE` as a table (each value read by the launcher's options model)."""
    bad = next((p for p in pairs if "=" not in p or not p.split("=", 1)[0].strip()), None)
    if bad is not None:
        raise UserError(f"--launcher-option {bad!r}: give KEY=VALUE, e.g. address=HOST:6379")
    return {k.strip(): v for k, _, v in (p.partition("=") for p in pairs)}


def launcher_help() -> str:
    """llmbench's launchers, each with what it does (`llmbench run --help`; a plugin's are listed in errors)."""
    return "; ".join(f"{n}: {cls.description}" for n, cls in LAUNCHERS.own())


def check_launcher(options: LauncherOptions, gpus: str | None = None, repeat: int = 1, parallel: bool = False) -> None:
    """What the run asks of its launcher, before anything runs."""
    refusal = LAUNCHERS.get(options.name).refusal(options, gpus, repeat, parallel)
    if refusal:
        raise UserError(f"--launcher {options.name}: {refusal}")


def case_launchers(options: LauncherOptions, cpu: bool,
                   extra_env: dict[str, str]) -> AbstractContextManager[list[Launcher]]:
    """The launchers of a run, one per result set it writes (a Ray launcher per GPU type of the cluster)."""
    return LAUNCHERS.get(options.name).opened(options, cpu, extra_env)
