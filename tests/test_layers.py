"""The package's imports point down the layers written in docs/design.md, and no two folders import
each other. Every import counts, also the lazy ones inside functions: a lazy import upward is still a
dependency upward."""

from __future__ import annotations

import ast
import re
from pathlib import Path

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
