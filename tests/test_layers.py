"""The package's imports point down the layers written in docs/design.md, and no two folders import
each other. Every import counts, also the lazy ones inside functions: a lazy import upward is still a
dependency upward."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "llmbench"


def declared_layers() -> list[list[str]]:
    """The ```layers block of docs/design.md: one line per layer, lowest first, units separated by
    spaces (a unit is a top-level module or sub-package of llmbench)."""
    text = (ROOT / "docs" / "design.md").read_text()
    m = re.search(r"```layers\n(.*?)```", text, re.S)
    assert m, "docs/design.md has no ```layers block"
    return [line.split(":", 1)[1].split() for line in m.group(1).strip().splitlines()]


def unit_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "llmbench" and len(parts) > 1 else None


def imports() -> list[tuple[str, str, str]]:
    """(importing file, its unit, imported unit) for every llmbench import in the package."""
    out = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        here = ".".join(rel.parts)
        unit = rel.parts[1] if len(rel.parts) > 1 else None
        if unit in (None, "__init__", "__main__"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                target = unit_of(name)
                exists = target and ((PACKAGE / target).is_dir() or (PACKAGE / f"{target}.py").exists())
                if exists and target != unit:
                    out.append((here, unit, target))
    return out


def test_every_unit_has_a_layer() -> None:
    layers = declared_layers()
    placed = {u for layer in layers for u in layer}
    units = {p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("__")}
    units |= {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert units - placed == set(), "units with no layer in docs/design.md"
    assert placed - units == set(), "docs/design.md names units that do not exist"


def test_imports_point_down() -> None:
    level = {u: i for i, layer in enumerate(declared_layers()) for u in layer}
    upward = sorted({f"{f} ({u}, layer {level[u]}) imports {t} (layer {level[t]})"
                     for f, u, t in imports() if level[t] >= level[u]})
    assert upward == [], "\n".join(upward)


def test_no_two_units_import_each_other() -> None:
    edges = {(u, t) for _, u, t in imports()}
    cycles = sorted({tuple(sorted((u, t))) for u, t in edges if (t, u) in edges})
    assert cycles == []


def test_commands_reach_harness_and_analysis_only_through_the_api() -> None:
    """docs/design.md: a command parses its options, calls `llmbench.api` and renders what comes back;
    the work (running, comparing, reading result sets) is the api's."""
    bypass = sorted(f"{f} imports {t}" for f, u, t in imports() if u == "commands" and t in ("harness", "analysis"))
    assert bypass == [], "\n".join(bypass)


# -- no circle between module files ------------------------------------------------------------------
def module_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (lazy imports too). `from a.b import c` points at the
    module a.b.c where there is one, else at a.b; a name under no module file points at its nearest
    module (a package's __init__). Importing a.b.c runs a's __init__ first, which is no edge: a package
    __init__ that imports its own submodules (a registry) is not a circle."""
    files = {p: p.relative_to(package.parent).with_suffix("").parts for p in package.rglob("*.py")}
    mods = {p: ".".join(parts[:-1] if parts[-1] == "__init__" else parts) for p, parts in files.items()}
    known = set(mods.values())
    graph: dict[str, set[str]] = {m: set() for m in known}
    for path, here in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"{node.module}.{a.name}" for a in node.names]
                names = [n if n in known else node.module for n in names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                while name not in known and "." in name:
                    name = name.rsplit(".", 1)[0]
                if name in known and name != here:
                    graph[here].add(name)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle of each strongly connected group of modules, as the modules along it."""
    out: list[list[str]] = []
    seen: set[str] = set()
    for start in sorted(graph):
        # the shortest way back to `start` (breadth first), over modules not in a circle already named
        back: dict[str, str] = {}
        frontier = [start]
        while frontier and start not in back:
            nxt = []
            for m in frontier:
                for t in sorted(graph[m] - seen):
                    if t not in back:
                        back[t] = m
                        nxt.append(t)
            frontier = nxt
        if start in back:
            path = [start]
            while (prev := back[path[-1]]) != start:
                path.append(prev)
            out.append([start, *reversed(path[1:]), start])
            seen |= set(path)
    return out


def test_no_circle_between_module_files() -> None:
    circles = [" -> ".join(c) for c in import_cycles(module_graph(PACKAGE))]
    assert circles == [], "move what both need into the lower module:\n" + "\n".join(circles)


def test_the_circle_check_sees_a_lazy_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub import low\n")  # a registry: no circle
    (pkg / "sub" / "low.py").write_text("def f():\n    from pkg.top import g\n")  # lazy, still counted
    (pkg / "top.py").write_text("from pkg.sub.low import f\n")
    (pkg / "other.py").write_text("from pkg import top\n")
    assert import_cycles(module_graph(pkg)) == [["pkg.sub.low", "pkg.top", "pkg.sub.low"]]


# -- scenarios are known by what they declare, not by name ------------------------------------------
# The harness asks a case's scenario (scenarios.base.Scenario's declarations: gpus_needed,
# max_batch_search, worker_settings, server_scope) and the report reads bottleneck_sweep; neither
# names a scenario, nor (the harness) a param that only some scenarios have. Checked: every string
# literal (docstrings aside: prose may name examples), exactly equal to such a name.

# (file, name): why that literal is not the scenario's. Each may appear once in its file: as the one
# constant (or the one lookup) that names it, so a second use is caught.
HARNESS_ALLOWED = {
    ("llmbench/harness/max_batch.py", "max_batch"): "INFO_KEY: the case's info entry of its search (result-set "
    "format, read by the report), not the scenario's flag param",
    ("llmbench/harness/max_batch.py", "batch_size"): "BATCH: a probe record's batch field (result-set format), "
    "whatever the declared axis",
    ("llmbench/harness/runner.py", "model"): "the fingerprint's CPU model name (parent_device)",
    ("llmbench/harness/worker.py", "model"): "the CPU model name from hardware.fingerprint.cpu_info",
    ("llmbench/harness/isolation.py", "compile"): "COMPILE_TMP: the run's compile-cache folder kind",
}
# Report files that still name scenarios: each pick of which committed cases a published page cites.
# Shrinks, never grows; analysis/ has no such list (it names none).
REPORT_NAMES_ALLOWED: dict[str, str] = {}


def package_scenarios() -> list[type]:
    """llmbench's own scenarios (a test's plugin scenarios, registered by earlier tests, left out)."""
    from llmbench.scenarios.base import SCENARIOS

    return [cls for _, cls in SCENARIOS if cls.__module__.startswith("llmbench.")]


def scenario_names() -> set[str]:
    return {cls.name for cls in package_scenarios()}


def scenario_only_params() -> set[str]:
    """Param names that some scenarios' Params have and others do not."""
    fields = [set(cls.Params.model_fields) for cls in package_scenarios()]
    return set().union(*fields) - set.intersection(*fields)


def string_literals(path: Path) -> list[tuple[int, str]]:
    """(line, value) of the string constants of a module, its docstrings left out."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def named(folder: str, words: set[str]) -> dict[tuple[str, str], list[int]]:
    """(file, word) -> the lines where a string literal of the folder's modules is exactly `word`."""
    out: dict[tuple[str, str], list[int]] = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        for line, value in string_literals(path):
            if value in words:
                out.setdefault((rel, value), []).append(line)
    return out


def test_the_harness_names_no_scenario_and_no_scenario_only_param() -> None:
    found = named("llmbench/harness", scenario_names() | scenario_only_params())
    bad = sorted(f"{f}:{lines} {w!r}" for (f, w), lines in found.items()
                 if (f, w) not in HARNESS_ALLOWED or len(lines) > 1)
    assert bad == [], "ask the case's scenario (scenarios.base declarations) instead:\n" + "\n".join(bad)


# what every scenario declares in (the base class, how a recorded case is read): no scenario's own module
DECLARATIONS = {"llmbench.scenarios.base", "llmbench.scenarios.reading"}


@pytest.mark.parametrize(("folder", "allowed"), [("llmbench/report", REPORT_NAMES_ALLOWED), ("llmbench/analysis", {})])
def test_report_and_analysis_name_no_scenario_nor_import_one(folder: str, allowed: dict[str, str]) -> None:
    found = named(folder, scenario_names())
    bad = sorted(f"{f}:{lines} {w!r}" for (f, w), lines in found.items() if f not in allowed)
    assert bad == [], "read what scenarios declare through SCENARIOS instead:\n" + "\n".join(bad)
    scenario_modules = sorted(f"{f} imports {t}" for f, t in module_imports(folder)
                              if t.startswith("llmbench.scenarios.") and t not in DECLARATIONS)
    assert scenario_modules == []


# -- analysis computes, report renders ---------------------------------------------------------------
# What would put a computation back into report/ (a statistics library) or rendering into analysis/
# (a terminal or plotting library, or a report module).
REPORT_MUST_NOT_IMPORT = ("numpy", "scipy", "statistics")
ANALYSIS_MUST_NOT_IMPORT = ("rich", "matplotlib", "llmbench.report")


def imports_of(folder: str, banned: tuple[str, ...]) -> list[str]:
    """'file imports module' for each import of the folder's modules that is, or is under, a banned name."""
    return sorted(f"{f} imports {m}" for f, m in module_imports(folder)
                  if any(m == b or m.startswith(b + ".") for b in banned))


def test_report_computes_nothing_and_analysis_renders_nothing() -> None:
    assert imports_of("llmbench/report", REPORT_MUST_NOT_IMPORT) == [], "compute it in llmbench/analysis/"
    assert imports_of("llmbench/analysis", ANALYSIS_MUST_NOT_IMPORT) == [], "render it in llmbench/report/"


def test_the_split_check_sees_a_banned_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: a statistics import in a report module is found."""
    folder = tmp_path / "llmbench" / "report"
    folder.mkdir(parents=True)
    (folder / "bad.py").write_text("def f():\n    from statistics import median\n    import numpy.linalg\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert imports_of("llmbench/report", REPORT_MUST_NOT_IMPORT) == [
        "llmbench/report/bad.py imports numpy.linalg", "llmbench/report/bad.py imports statistics"]


# Report and analysis read params only through what scenarios declare (their charts: sweep_axes,
# metric_axes, power_limit_param; bottleneck_sweep, engine_slot), with these exceptions: the axis every figure has,
# and words that are keys of llmbench's own records or tables, not the params of the same name.
AXES_ALLOWED = {
    "precision": "the precision axis (llmbench.precision, layer 1): every figure's precision",
}
RECORD_WORDS = {
    "n": "the sample count of a metric row or table column",
    "kind": "a table column (what kind of source)",
    "threshold": "the gate's JSON key",
    "batch": "the key of a bottleneck answer (BottleneckSweep.answer)",
}


@pytest.mark.parametrize("folder", ["llmbench/report", "llmbench/analysis"])
def test_report_and_analysis_name_no_scenario_only_param(folder: str) -> None:
    found = named(folder, scenario_only_params())
    bad = sorted(f"{f}:{lines} {w!r}" for (f, w), lines in found.items() if w not in AXES_ALLOWED | RECORD_WORDS)
    assert bad == [], "declare it on the scenario (scenarios.base) and read the declaration:\n" + "\n".join(bad)


def test_the_allow_lists_hold_only_what_is_still_there() -> None:
    found = named("llmbench/harness", scenario_names() | scenario_only_params())
    assert set(HARNESS_ALLOWED) <= set(found), "an allowed literal is gone: drop it from HARNESS_ALLOWED"
    report = {f for f, _ in named("llmbench/report", scenario_names())}
    assert set(REPORT_NAMES_ALLOWED) <= report, "a file no longer names scenarios: drop it from REPORT_NAMES_ALLOWED"
    words = {w for folder in ("llmbench/report", "llmbench/analysis") for _, w in named(folder, scenario_only_params())}
    assert set(AXES_ALLOWED) | set(RECORD_WORDS) <= words, "an allowed word is gone: drop it"


def module_imports(folder: str) -> list[tuple[str, str]]:
    """(file, imported module) for the absolute imports of a folder's modules (lazy ones too)."""
    out = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                out.append((str(path.relative_to(ROOT)), node.module))
            elif isinstance(node, ast.Import):
                out += [(str(path.relative_to(ROOT)), a.name) for a in node.names]
    return out
