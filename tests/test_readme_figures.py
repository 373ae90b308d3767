"""The figures README.md cites from committed result sets match those sets: each entry of
tests/readme_figures.toml names a passage of the README, the number in it, the cases it comes from
and how (an arithmetic expression over their metrics and info), and the number must be what the JSON
gives, rounded as the README writes it. A figure typed from memory, or left behind when a set was
re-measured, fails here."""

from __future__ import annotations

import ast
import json
import operator
import re
import sys
from typing import Any

import pytest

from tests.conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

FIGURES = tomllib.loads((ROOT / "tests" / "readme_figures.toml").read_text(encoding="utf-8"))
README = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_FUNCS = {"mean": lambda xs: sum(xs) / len(xs), "min": min, "max": max}


class _Case:
    """A case (or a JSON object) in an expression: `a.metric` is a metric's value, `a.info.key` its info."""

    def __init__(self, data: dict[str, Any], label: str) -> None:
        self.data, self.label = data, label

    def get(self, name: str) -> Any:
        metrics = self.data.get("metrics") or {}
        if name in metrics:
            return metrics[name]["value"]
        if name == "info":
            return _Case(self.data.get("info") or {}, f"{self.label}.info")
        if name in self.data:
            got = self.data[name]
            return _Case(got, f"{self.label}.{name}") if isinstance(got, dict) else got
        raise KeyError(f"{self.label} has no {name!r}")


def _load(ref: dict[str, Any], label: str) -> _Case:
    """A case of a result set picked by params (exactly one must match), or an object of a JSON file."""
    path = ROOT / "results" / FIGURES["sets"].get(ref["set"], ref["set"])
    data = json.loads(path.read_text(encoding="utf-8"))
    if "cases" not in data:  # a benchmark's JSON (or spread's): `key` is the dotted path to the object
        for part in ref["key"].split("."):
            data = data[part]
        return _Case(data, f"{label}={path.name}:{ref['key']}")
    want = {k: v for k, v in ref.items() if k != "set"}
    hits = [c for c in data["cases"] if all(c["params"].get(k) == v for k, v in want.items())]
    assert len(hits) == 1, f"{label}: {len(hits)} cases of {path.name} match {want}"
    assert hits[0]["status"] == "ok", f"{label}: {hits[0]['id']} is {hits[0]['status']}"
    return _Case(hits[0], f"{label}={hits[0]['id']}")


def _eval(node: ast.AST, cases: dict[str, _Case]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, cases)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.left, cases), _eval(node.right, cases))
    if isinstance(node, ast.Name):
        return cases[node.id]
    if isinstance(node, ast.Attribute):
        return _eval(node.value, cases).get(node.attr)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
        return _FUNCS[node.func.id](*[_eval(a, cases) for a in node.args])
    raise ValueError(f"not allowed in a figure's expression: {ast.dump(node)}")


def _number(text: str) -> tuple[float, float]:
    """'1,348' -> (1348, 0.5); '51.4k' -> (51400, 50); '0.985' -> (0.985, 0.0005): the value and half its
    last written digit."""
    m = re.fullmatch(r"([\d,]*\d)(?:\.(\d+))?(k?)", text)
    assert m, f"not a number as the README writes one: {text!r}"
    decimals = len(m.group(2) or "")
    scale = 1000.0 if m.group(3) else 1.0
    value = float(m.group(1).replace(",", "") + (f".{m.group(2)}" if m.group(2) else "")) * scale
    return value, 0.5 * 10.0**-decimals * scale


@pytest.mark.parametrize("fig", FIGURES["figure"], ids=lambda f: f"{f['text'][:40]}|{f['number']}")
def test_readme_figure_matches_its_result_set(fig: dict[str, Any]) -> None:
    text = " ".join(fig["text"].split())
    assert text in README, f"README.md no longer says {text!r}: update tests/readme_figures.toml with it"
    assert re.search(rf"(?<![\d.]){re.escape(fig['number'])}(?![\d])", text), f"{fig['number']!r} is not in {text!r}"
    cases = {name: _load(ref, name) for name, ref in fig["cases"].items()}
    got = float(_eval(ast.parse(fig["expr"], mode="eval"), cases))
    want, half = _number(fig["number"])
    assert abs(got - want) <= half * (1 + 1e-9), f"README says {fig['number']} in {text!r}; the JSON gives {got:.6g}"


def test_every_committed_set_a_figure_names_exists() -> None:
    for alias, rel in FIGURES["sets"].items():
        assert (ROOT / "results" / rel).is_file(), f"{alias}: results/{rel} is not committed"
