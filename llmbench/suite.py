"""Suite files (*.toml): found by name (`suite_folders`, first match wins), read, every key validated before
anything runs, the matrix expanded. A suite says WHAT to run; scenario classes say HOW. Every problem is a
`SuiteError` naming the file, the key, the bad value and the valid choices. docs/design.md, "Suite files"."""

from __future__ import annotations

import functools
import itertools
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from llmbench.engines.base import ENGINES, EngineOptions, build_engine, engine_class, engine_options
from llmbench.errors import SuiteError, UserError, choices_hint, did_you_mean
from llmbench.ids import NAME_MAX, case_id, name_problem, params_text
from llmbench.measure.timing import StopRule
from llmbench.placement import Placement
from llmbench.redact import redact_value
from llmbench.results import EngineRecord, PlacementRecord
from llmbench.scenarios.base import SCENARIOS, Scenario, ScenarioParams

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SUITE_KEYS = {"name", "description", "defaults", "case", "share_engines", "launcher"}
CASE_KEYS = {"scenario", "matrix", "name"}  # plus scenario params, StopRule settings, engine and placement
SETTING_KEYS = set(StopRule.model_fields)
SOURCE_DIR = "scenarios"  # the repository's folder of the shipped suites, beside llmbench/ in a checkout
SUITES_ENV = "LLMBENCH_SUITES"
WORKDIR_FOLDERS = ("suites", "scenarios")  # a user's own suites beside where llmbench runs
PACKAGED = "packaged"
ONE_GPU = Placement.model_validate({})


def shipped_suites_dir() -> Path:
    """The suites shipped with llmbench: package data `llmbench/suites/` of an installed wheel (pyproject.toml
    maps it from the repository's top-level scenarios/); run from a checkout (on PYTHONPATH, or installed
    editable, where llmbench/suites/ does not exist), that scenarios/ folder itself."""
    packaged = resources.files("llmbench") / "suites"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(str(resources.files("llmbench"))).parent / SOURCE_DIR


SUITES_DIR = shipped_suites_dir().resolve()


@dataclass(frozen=True)
class CaseSpec:
    """One expanded case: validated params, harness settings, the engine it runs on (its [engine] table,
    validated by the engine's options model), the GPUs it holds, and its id."""

    scenario: str
    params: ScenarioParams
    settings: StopRule
    origin: str = ""  # "case 2", for messages naming the case in its suite file
    engine: EngineOptions | None = None
    placement: Placement = ONE_GPU

    @functools.cached_property
    def params_dict(self) -> dict[str, Any]:
        """The params a result set records and the id hashes (flat_record: engine and GPUs included)."""
        return flat_record(SCENARIOS.get(self.scenario), self.params, self.engine, self.placement)

    @property
    def id(self) -> str:
        return case_id(self.scenario, self.params_dict)

    @property
    def label(self) -> str:
        return f"{self.scenario} {params_text(self.params_dict)}"

    @property
    def result_fields(self) -> dict[str, Any]:
        """What a result of this case records of the case: its id, scenario, params, and its engine and
        placement typed (a credential in an engine's options hidden, as in its params)."""
        engine = None if self.engine is None else EngineRecord(
            name=self.engine.name, options=redact_value(self.engine.model_dump(mode="json", exclude={"name"})))
        placement = PlacementRecord(gpus=self.placement.gpus, nodes=self.placement.nodes,
                                    replicas=self.placement.replicas)
        return {"id": self.id, "scenario": self.scenario, "params": self.params_dict, "engine": engine,
                "placement": placement}

    def with_settings(self, **changes: Any) -> CaseSpec:
        """The same case (same id) with other harness settings."""
        return replace(self, settings=self.settings.model_copy(update=changes))

    def scenario_obj(self) -> Scenario:
        """The scenario bound to this case's engine (built from its options) and placement."""
        cls = SCENARIOS.get(self.scenario)
        slot = cls.engine_slot
        return cls(build_engine(self.engine, slot.interface) if slot and self.engine else None, self.placement)

    def worker_spec(self, device: str) -> dict[str, Any]:
        """What the case process reads (harness/worker.py run_case)."""
        return {"scenario": self.scenario, "params": self.params.model_dump(mode="json"),
                "engine": self.engine.model_dump(mode="json") if self.engine else None,
                "placement": self.placement.model_dump(), "settings": self.settings.model_dump(), "device": device}


@dataclass
class Suite:
    name: str
    description: str
    path: Path
    cases: list[CaseSpec] = field(default_factory=list)
    origin: str = ""  # where it was found: "packaged", "--suites", LLMBENCH_SUITES, "./suites", or "" for a path
    replaces: tuple[Path, ...] = ()  # suite files of the same name it was found before (a shipped one, ...)
    # cases that load the same engine session (one engine, model, precision and mode; only batch or
    # lengths differ) run in one case process, one after another, each still its own case (runner.py)
    share_engines: bool = False
    old_keys: tuple[str, ...] = ()  # engine or GPU keys written as params, the spelling before they were fields
    launcher: dict[str, Any] | None = None  # its [launcher] table: a name and that launcher's options, read by
    # the launcher's options model when a run starts (harness/launchers/choose.py); None: local

    def where(self) -> str:
        """One line on where a suite found by name came from, for a run's first lines; "" for a shipped
        suite or a file named by path (nothing to say)."""
        if self.origin in ("", PACKAGED):
            return ""
        instead = f", in place of {replaced_text(self.replaces)}" if self.replaces else ""
        return f"suite {self.name}: {self.path} (from {self.origin}{instead})"

    def notes(self) -> list[str]:
        """A run's first lines about this suite: where it came from, and (one line for the whole file) the
        new spelling of the engine and GPU keys it writes as params."""
        old = ("" if not self.old_keys else
               f"suite {self.name}: {', '.join(self.old_keys)} are written as params, as before engine and placement "
               "were fields of a case; this still reads (same case ids), but write them as engine = {name = ..., "
               "mode = ..., tensor_parallel = ...} and placement = {gpus = N} (docs/design.md, Suite files)")
        return [line for line in (self.where(), old) if line]


@dataclass(frozen=True)
class SuiteFile:
    """A suite found by name: its file, the folder kind it came from, and the files of the same name
    further down the search order that it replaces."""

    name: str
    path: Path
    origin: str
    replaces: tuple[Path, ...] = ()


def replaced_text(paths: Sequence[Path]) -> str:
    """What a user's suite file replaces, in words: "the packaged one" or the other files' paths."""
    return ", ".join("the packaged one" if p.parent == SUITES_DIR else str(p) for p in paths)


def suite_folders(extra: Sequence[Path] = ()) -> list[tuple[Path, str]]:
    """The folders suites are looked for in, first match wins, each with where it came from. A
    folder named with --suites or in LLMBENCH_SUITES must exist (a typo would silently fall back
    to the shipped suite of the same name); the working directory's are used when present, unless one is
    the shipped folder itself (./scenarios run from a checkout): that is listed once, as packaged."""
    named = [(Path(d), "--suites") for d in extra]
    named += [(Path(d), SUITES_ENV) for d in os.environ.get(SUITES_ENV, "").split(os.pathsep) if d]
    for d, how in named:
        if not d.is_dir():
            raise UserError(f"{how} {str(d)!r} is not a folder; give a folder of suite .toml files")
    here = [(Path.cwd() / d, f"./{d}") for d in WORKDIR_FOLDERS]
    return [*named, *[(d, how) for d, how in here if d.is_dir() and d.resolve() != SUITES_DIR], (SUITES_DIR, PACKAGED)]


def available_suites(extra: Sequence[Path] = ()) -> dict[str, SuiteFile]:
    """Suites by name, sorted, each the first file of that name in `suite_folders` order."""
    out: dict[str, SuiteFile] = {}
    for folder, origin in suite_folders(extra):
        for p in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
            first = out.get(p.stem)
            if first is None:
                out[p.stem] = SuiteFile(p.stem, p, origin)
            else:
                out[p.stem] = replace(first, replaces=(*first.replaces, p))
    return dict(sorted(out.items()))


def find_suite(name_or_path: str, extra: Sequence[Path] = ()) -> SuiteFile:
    """A suite name ('quickstart') or a path to a .toml file (origin "")."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or _exists(p):
        if not p.is_file():
            raise UserError(f"suite file {name_or_path!r} does not exist")
        return SuiteFile(p.stem, p, "")
    suites = available_suites(extra)
    if name_or_path in suites:
        return suites[name_or_path]
    shown = name_or_path if len(name_or_path) <= NAME_MAX else name_or_path[:NAME_MAX] + "..."
    hint = did_you_mean(name_or_path, suites) or ("no suite found" if not suites else "")
    raise UserError(f"unknown suite {shown!r}{f' ({hint})' if hint else ''}; `llmbench list suites` lists them, "
                    "or give a path to a .toml file")


def _exists(p: Path) -> bool:
    """Whether a path exists; a name the filesystem refuses (too long) does not."""
    try:
        return p.exists()
    except OSError:
        return False


def load_suite(name_or_path: str, extra: Sequence[Path] = ()) -> Suite:
    """A suite by name (searched as `suite_folders` says, `extra` first) or by path, parsed."""
    found = find_suite(name_or_path, extra)
    path = found.path
    fname = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a BOM (some editors write one) is no TOML error
    except tomllib.TOMLDecodeError as e:
        raise SuiteError(fname, f"malformed TOML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SuiteError(fname, f"cannot read the file: {e}") from None
    return replace(parse_suite(data, fname, path), origin=found.origin, replaces=found.replaces)


def parse_suite(data: dict[str, Any], fname: str, path: Path | None = None) -> Suite:
    for key in data:
        if key not in SUITE_KEYS:
            raise SuiteError(fname, "unknown top-level key", key=key, choices=sorted(SUITE_KEYS))
    name = data.get("name") or (path.stem if path else "suite")
    problem = name_problem(name)
    if problem:
        shown = name if not isinstance(name, str) or len(name) <= NAME_MAX else name[:NAME_MAX] + "..."
        raise SuiteError(fname, f"the suite name {problem}", key="name", value=shown)
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise SuiteError(fname, "must be a table", key="defaults", value=defaults)
    raw_cases = data.get("case")
    if not raw_cases or not isinstance(raw_cases, list):
        raise SuiteError(fname, "a suite needs at least one [[case]] table", key="case")

    cases: list[CaseSpec] = []
    used_defaults: set[str] = set()
    old_keys: set[str] = set()
    for i, raw in enumerate(raw_cases, start=1):
        cases.extend(_expand_case(raw, defaults, fname, i, used_defaults, old_keys))
    unused = set(defaults) - used_defaults - SETTING_KEYS
    if unused:
        key = sorted(unused)[0]
        valid = sorted({f for c in cases for f in type(c.params).model_fields} | SETTING_KEYS)
        raise SuiteError(fname, "[defaults] key is not a parameter of any scenario in this suite",
                         key=key, value=defaults[key], choices=valid)
    seen: dict[str, str] = {}
    for c in cases:
        if c.id in seen:  # a later result would overwrite the earlier one in the result set
            first = seen[c.id]
            which = f"{c.origin}'s matrix repeats a case" if first == c.origin else f"{c.origin} repeats {first}"
            raise SuiteError(fname, f"{which}: case id {c.id} ({c.label}) twice (same scenario and params)",
                             key="case")
        seen[c.id] = c.origin
    share = data.get("share_engines", False)
    if not isinstance(share, bool):
        raise SuiteError(fname, "must be true or false", key="share_engines", value=share, choices=["true", "false"])
    launcher = data.get("launcher")
    if launcher is not None and not isinstance(launcher, (str, dict)):
        raise SuiteError(fname, 'must be a name or a table ([launcher] name = "ray")', key="launcher", value=launcher)
    return Suite(name=name, description=str(data.get("description", "")), path=path or Path(fname), cases=cases,
                 share_engines=share, old_keys=tuple(sorted(old_keys)),
                 launcher={"name": launcher} if isinstance(launcher, str) else launcher)


def _expand_case(
    raw: Any, defaults: dict[str, Any], fname: str, index: int, used_defaults: set[str], old_keys: set[str]
) -> list[CaseSpec]:
    where = f"case {index}"
    if not isinstance(raw, dict):
        raise SuiteError(fname, f"{where} must be a table", key="case")
    scen_name = raw.get("scenario", defaults.get("scenario"))
    if scen_name is None:
        raise SuiteError(fname, f"{where} has no scenario", key="scenario", choices=SCENARIOS.names())
    if scen_name not in SCENARIOS:
        raise SuiteError(fname, f"{where}: unknown scenario", key="scenario", value=scen_name,
                         choices=SCENARIOS.names())
    scen = SCENARIOS.get(scen_name)
    matrix = raw.get("matrix", {})
    if not isinstance(matrix, dict):
        raise SuiteError(fname, f"{where}: matrix must be a table of lists", key="matrix", value=matrix)
    for k, v in matrix.items():
        if not isinstance(v, list) or not v:
            raise SuiteError(fname, f"{where}: matrix values must be non-empty lists", key=f"matrix.{k}", value=v)
        if k in SETTING_KEYS:  # settings are not in the case id: a matrix of them would repeat one case
            raise SuiteError(fname, f"{where}: {k} is a harness setting, and settings cannot be matrix axes "
                             f"(only scenario params can); set {k} = <one value> in the case or [defaults]",
                             key=f"matrix.{k}", value=v)
    fixed = {k: v for k, v in raw.items() if k not in CASE_KEYS}
    out = []
    keys = list(matrix)
    for combo in itertools.product(*(matrix[k] for k in keys)) if keys else [()]:
        given = {**fixed, **dict(zip(keys, combo, strict=True))}
        out.append(_case(scen, {**defaults, **given}, fname, where, old_keys, set(given), used_defaults))
    return out


# The flat record: a case as result sets of schema 1 and 2 held it and its id hashes it, its engine's
# options and its GPUs among the scenario's params under the names they had there.

def flat_record(cls: type[Scenario[Any]], params: ScenarioParams, engine: EngineOptions | None,
                placement: Placement) -> dict[str, Any]:
    """A case's params as a result set records them and its id hashes them: the scenario's params, the
    engine's options and the GPUs in the spelling they had as params (`EngineOptions.record`,
    `gpus_param`), so a case keeps its id whichever way its suite file writes it. A placement enters
    under its own name only where it says more than the engine's tensor parallelism does. Credentials
    are hidden (llmbench.redact: a server command's `--api-key K`, a URL's `?token=`), so neither the
    result set nor the id holds one; params without any are recorded as they are (same ids)."""
    out = params.model_dump(mode="json")
    implied = getattr(engine, "tensor_parallel", cls.default_placement.gpus)
    if cls.gpus_param is not None:
        out[cls.gpus_param] = placement.gpus
    elif placement.gpus != implied:
        out["placement"] = {"gpus": placement.gpus}
    if placement.nodes > 1:  # ranks over several nodes: another measurement than on one
        out["placement"] = {**out.get("placement", {}), "nodes": placement.nodes}
    if placement.replicas > 1:  # copies of the case side by side: another measurement than one copy
        out["placement"] = {**out.get("placement", {}), "gpus": placement.gpus, "replicas": placement.replicas}
    return redact_value(out | (engine.record() if engine is not None else {}))


def split_flat(cls: type[Scenario[Any]],
               flat: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]:
    """A case written before the engine and placement were fields of their own (their keys among the
    params: `engine`, `mode`, `tensor_parallel`, `fuse`, `engine_options`, `server`, `url`, `n_gpus`,
    `gpus`, ...) as (params, [engine] table, placement); keys it does not know stay in the params,
    whose validation names them."""
    fields = cls.Params.model_fields
    params = {k: v for k, v in flat.items() if k in fields}
    rest = {k: v for k, v in flat.items() if k not in fields and v is not None}  # a record's None: not set
    slot, table = cls.engine_slot, None
    if slot is not None:
        name = rest.pop("engine", None) or next((e for k, e in slot.named_by.items() if k in rest), slot.default)
        if name is not None:
            options = engine_class(str(name), slot.interface).options_model(slot.interface).model_fields
            table = {"name": name, **(rest.pop("engine_options", None) or {})}
            for old, engine in slot.named_by.items():
                if engine == name and old in rest:
                    table[engine] = rest.pop(old)
            table |= {k: rest.pop(k) for k in list(rest) if k in options and k != "name"}
    placement = {"gpus": rest.pop(cls.gpus_param)} if cls.gpus_param in rest else None
    return params | rest, table, placement


def _case(scen: type[Scenario], values: dict[str, Any], fname: str, where: str, old_keys: set[str],
          given: set[str] | None = None, used: set[str] | None = None) -> CaseSpec:
    """One case from its keys (defaults, the case's own, a matrix point): settings, params, its [engine]
    table and placement, old spellings moved into them (noted in `old_keys`), tensor parallelism and GPUs
    checked against each other, each part validated by its own model. A key the scenario does not take
    is an error where the case gives it (`given`; None: every key), and another scenario's in [defaults]."""
    fields, slot = set(scen.Params.model_fields), scen.engine_slot
    settings = {k: values.pop(k) for k in list(values) if k in SETTING_KEYS}
    named, placed = values.pop("engine", None) if slot else None, values.pop("placement", None)
    table = {"name": named} if isinstance(named, str) else named
    if (table is not None and not isinstance(table, dict)) or (placed is not None and not isinstance(placed, dict)):
        raise SuiteError(fname, f"{where}: engine is a name or a table (engine = {{name = \"vllm\", ...}}), "
                         "placement a table (placement = {gpus = 2})", key="engine" if named else "placement")
    try:
        named_engine = {"engine": table["name"]} if table and "name" in table else {}
        params, old, legacy_place = split_flat(scen, {**values, **named_engine})
        unknown = set(params) - fields
        for k in sorted(unknown & (set(params) if given is None else given)):
            raise SuiteError(fname, f"{where}: unknown key for scenario {scen.name!r}", key=k,
                             choices=sorted(fields | SETTING_KEYS | {"placement"} | ({"engine"} if slot else set())))
        params = {k: v for k, v in params.items() if k not in unknown}  # another scenario's [defaults]
        old_keys.update(set(values) - set(params) - unknown - {"engine"})
        if used is not None:  # the [defaults] keys some case took
            used |= set(values) - unknown | {k for k, v in (("engine", named), ("placement", placed)) if v is not None}
        table = {**(old or {}), **(table or {})} if (old or table) else None
        place = {**(legacy_place or {}), **(placed or {})}
        if slot is not None and table is None:
            valid = ", ".join(n for n, c in ENGINES if issubclass(c, slot.interface))
            raise ValueError(f"scenario {scen.name!r} needs an engine: engine = {{name = ...}}, one of {valid}")
        options = None
        if slot is not None and table is not None:
            model = engine_class(str(table.get("name")), slot.interface).options_model(slot.interface)
            dp = int(table.get("data_parallel") or 1) if "data_parallel" in model.model_fields else 1
            tp, copies = table.get("tensor_parallel"), int(place.get("replicas") or 1) * dp
            gpus = place.get("gpus")
            if isinstance(gpus, int) and gpus % copies:
                raise ValueError(f"placement gpus = {gpus} does not split evenly over {copies} copies "
                                 "(replicas x the engine's data_parallel)")
            each = gpus // copies if isinstance(gpus, int) else None
            if "tensor_parallel" in model.model_fields:
                if tp is not None and each is not None and tp != each:
                    per = f" / {copies} copies (replicas x data_parallel)" if copies > 1 else ""
                    raise ValueError(f"engine tensor_parallel = {tp} but placement gpus = {place['gpus']}{per}: a "
                                     "tensor-parallel engine runs on the GPUs the case (each replica) is placed on; "
                                     "give one, or the same number")
                size = tp or each
                if size:
                    table, place = {**table, "tensor_parallel": size}, {**place, "gpus": int(size) * copies}
            options = engine_options(table, slot.interface)
    except ValueError as e:
        raise SuiteError(fname, f"{where}: {e}", key="engine") from None
    placement = _validate(Placement, {**scen.default_placement.model_dump(), **place}, fname, where)
    if placement.replicas > 1 and not scen.replicable:
        raise SuiteError(fname, f"{where}: scenario {scen.name!r} does not run as replicas (placement replicas = "
                         f"{placement.replicas}); those that do: {', '.join(replicable_scenarios())}", key="placement")
    engine = build_engine(options, slot.interface) if slot is not None and options is not None else None
    return CaseSpec(
        scenario=str(scen.name),
        params=scen(engine, placement).complete(_validate(scen.Params, params, fname, where)),
        settings=_validate(StopRule, settings, fname, where),
        origin=where,
        engine=options,
        placement=placement,
    )


def replicable_scenarios() -> list[str]:
    """The scenarios whose cases may run as replicas (Scenario.replicable)."""
    return [name for name, cls in SCENARIOS if cls.replicable]


def case_from(scenario: str, values: dict[str, Any], settings: dict[str, Any] | None = None) -> CaseSpec:
    """One case of `scenario` from its keys as a suite file gives them (either spelling): what tests and
    library callers build a case from without a file."""
    return _case(SCENARIOS.get(scenario), {**values, **(settings or {})}, "<case>", "case", set())


def _validate(model: type[BaseModel], values: dict[str, Any], fname: str, where: str) -> Any:
    try:
        return model.model_validate(values)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or None
        choices = _choices_from(err)
        value = err.get("input") if err["type"] != "missing" else None
        msg = err["msg"] if not choices else "invalid value"
        raise SuiteError(fname, f"{where}: {msg}", key=key, value=value, choices=choices) from None


def _choices_from(err: Any) -> list[str] | None:
    ctx = err.get("ctx") or {}
    expected = ctx.get("expected")
    if err["type"] == "literal_error" and expected:
        return [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(",") if c.strip()]
    if isinstance(ctx.get("choices"), (list, tuple)):
        return [str(c) for c in ctx["choices"]]
    return None


PLACEMENT_KEYS = ("gpus", "nodes", "replicas")  # a filter reads these from the case's placement


def filter_cases(cases: list[CaseSpec], filters: list[str]) -> list[CaseSpec]:
    """Keep cases matching every filter. `key=v1,v2` matches a scenario or param value, the GPUs a case
    is placed on (`gpus=2`, `nodes`, `replicas`: its placement, however its suite spells it), the engine it
    runs on (`engine=vllm`, however its suite names it: a serving `url` is the url engine), or an id
    whole (`gemm/3b7d3177710d`) or by its hash alone (`3b7d3177710d`); any other text is a substring of
    the case label or id."""
    out = cases
    for f in filters:
        if "=" in f:
            key, _, vals = f.partition("=")
            wanted = {v.strip() for v in vals.split(",")}
            every = ("scenario", "id", *PLACEMENT_KEYS)
            known = set(every) | {k for c in cases for k in c.params_dict} | {"engine" for c in cases if c.engine}
            if key not in known:
                raise UserError(f"--filter {f!r}: unknown key {key!r}; {choices_hint(key, sorted(known))}")
            having = [c for c in cases if key in every or key in c.params_dict or (key == "engine" and c.engine)]
            valid = set().union(set(), *(_names_of(c, key) for c in having))
            unknown = wanted - valid
            if key != "id" and unknown:  # an id names one case: listing every id would not help
                raise UserError(f"--filter {f!r}: {key}={','.join(sorted(unknown))} names no case; "
                                f"{choices_hint(min(unknown), sorted(valid), f'valid {key} values')}")
            out = [c for c in out if _names_of(c, key) & wanted]
        else:
            out = [c for c in out if f in c.label or f in c.id]
    return out


def _names_of(c: CaseSpec, key: str) -> set[str]:
    """How a filter may name the case's `key`: an id whole or by its hash, a list param as AxBxC."""
    if key == "scenario":
        return {c.scenario}
    if key == "id":
        return {c.id, c.id.partition("/")[2]}
    if key in PLACEMENT_KEYS:
        return {str(getattr(c.placement, key))}
    if key == "engine" and c.engine is not None:
        return {c.engine.name}
    v = c.params_dict.get(key)
    if isinstance(v, (list, tuple)):
        return {"x".join(str(x) for x in v)}
    if isinstance(v, bool):  # as a suite file spells it (TOML's false) or as Python prints it
        return {str(v).lower(), str(v)}
    return {str(v)}
