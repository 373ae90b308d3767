"""The figures README.md and the user docs cite from committed result sets match those sets, and no
other figure is there. Each entry of tests/readme_figures.toml names a passage of a document, the
number in it (or, with `exprs`, every figure of the passage in order), the cases they come from and how
(an arithmetic expression over their metrics and info); each number must be what the JSON gives,
rounded as written. A figure llmbench's analysis computes and prints on a page `nox -s publish` writes
(results/h100-vs-a100.md: the parts' bounds of a projection) is traced by `page`, `numbers` and `row`
instead: each number, as written, is in the first line of that page holding `row`, the page generated here
from the committed sets. Every figure in the documents' prose and tables (a number with a unit or a
ratio's x, a table cell that is a number, an MFU) must be one of those, or lie in a passage listed under
`not_a_figure` with its reason. The README's answer table must be what `llmbench.publishing.readme`
generates from the result sets now. A figure typed from memory, or left behind when a set was measured
again, fails here (a diary's words: tests/test_words.py)."""

from __future__ import annotations

import ast
import functools
import json
import operator
import re
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

from llmbench.publishing import readme
from llmbench.report.pair_view import pair_page
from tests.conftest import ROOT, is_tracked

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

FIGURES = tomllib.loads((ROOT / "tests" / "readme_figures.toml").read_text(encoding="utf-8"))
DOCUMENTS = ("README.md", "docs/usage.md", "docs/scenarios.md", "docs/measurements.md", "docs/a100.md",
             "docs/design.md")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.Pow: operator.pow}  # a geometric mean: (r1 * ... * rn) ** (1 / n)
_FUNCS = {"mean": lambda xs: sum(xs) / len(xs), "min": min, "max": max, "median": statistics.median}
_UNIT = re.compile(r"(?:x|×|%|\s?(?:tok/s|tokens/s|TFLOP/s|TB/s|GB/s|samples/s|samples/J|GiB|GB|MB|ms|µs|s|min|J|W|°C))"
                   r"(?![\w/])")
_NUMBER = re.compile(r"(?<![\w.\-/])\d[\d,]*(?:\.\d+)?k?(?![\d])")
_RANGE = re.compile(r"(?<![\w.\-/])(\d[\d,]*(?:\.\d+)?)[-–](\d[\d,]*(?:\.\d+)?k?)(?![\d])")  # '1.49-2.52x'
_MASK = re.compile(r"`[^`]*`|<!--.*?-->|\]\([^)]*\)|\{#[^}]*\}")


def _prose(raw: str) -> str:
    """A document as one line: the generated block and fenced code blocks dropped (no passage spans
    them), whitespace collapsed."""
    raw = re.sub(re.escape(readme.BEGIN) + ".*?" + re.escape(readme.END), " ", raw, flags=re.S)
    raw = re.sub(r"^```.*?^```", " ", raw, flags=re.S | re.M)
    return " ".join(raw.split())


TEXTS = {name: _prose((ROOT / name).read_text(encoding="utf-8")) for name in DOCUMENTS}


def figures_in(text: str) -> list[tuple[int, str]]:
    """(position, number as written) of each figure in `text`: a number followed by a unit or a ratio's
    x, a number alone in a table cell, a number after "MFU", and both ends of a range with a unit
    ("1.49-2.52x", "5-10%"). Code spans, comments and link targets are not prose; params such as
    "batch 32" or "2048 input" are not figures."""
    masked = _MASK.sub(lambda m: " " * len(m.group()), text)
    out = []
    for m in _NUMBER.finditer(masked):
        before, rest = masked[: m.start()], masked[m.end():]
        if _UNIT.match(rest) or (before.endswith("| ") and rest.startswith(" |")) or before.endswith("MFU "):
            out.append((m.start(), m.group()))
    for m in _RANGE.finditer(masked):
        if _UNIT.match(masked[m.end():]):
            out += [(m.start(1), m.group(1)), (m.start(2), m.group(2))]
    return sorted(set(out))


def _occurrences(text: str) -> list[tuple[str, int]]:
    """(document, position) of every place a passage appears."""
    want = " ".join(text.split())
    return [(doc, m.start()) for doc, body in TEXTS.items() for m in re.finditer(re.escape(want), body)]


def _passage_figures(text: str) -> list[str]:
    """The figures of a passage as its first occurrence reads them (in its document's context)."""
    doc, at = _occurrences(text)[0]
    end = at + len(" ".join(text.split()))
    return [n for pos, n in figures_in(TEXTS[doc]) if at <= pos < end]


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
    assert is_tracked(path), f"{label}: {path.resolve().relative_to(ROOT)} is not committed"
    data = json.loads(path.read_text(encoding="utf-8"))
    if "cases" not in data:  # a benchmark's JSON (or spread's): `key` is the dotted path to the object
        for part in ref["key"].split("."):
            data = data[part]
        if isinstance(data, list):  # a list of rows (spread's `rows`): `row` holds the fields that pick one
            hits = [r for r in data if all(r.get(k) == v for k, v in ref["row"].items())]
            assert len(hits) == 1, f"{label}: {len(hits)} rows of {path.name}:{ref['key']} match {ref['row']}"
            data = hits[0]
        if isinstance(data, int | float):  # a key down to a number (keys with spaces): the expression is `a`
            return data  # type: ignore[return-value]
        return _Case(data, f"{label}={path.name}:{ref['key']}")
    want = {k: v for k, v in ref.items() if k != "set"}  # params, or `id` (a case whose params hold a default)
    hits = [c for c in data["cases"]
            if all((c["id"] if k == "id" else c["params"].get(k)) == v for k, v in want.items())]
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
    assert m, f"not a number as the documents write one: {text!r}"
    decimals = len(m.group(2) or "")
    scale = 1000.0 if m.group(3) else 1.0
    value = float(m.group(1).replace(",", "") + (f".{m.group(2)}" if m.group(2) else "")) * scale
    return value, 0.5 * 10.0**-decimals * scale


def _check(number: str, expr: str, cases: dict[str, _Case], text: str) -> None:
    got = float(_eval(ast.parse(expr, mode="eval"), cases))
    want, half = _number(number)
    assert abs(got - want) <= half * (1 + 1e-9), f"the docs say {number} in {text!r}; the JSON gives {got:.6g}"


@pytest.mark.parametrize("fig", [f for f in FIGURES["figure"] if "page" not in f],
                         ids=lambda f: f"{f['text'][:40]}|{f.get('number', 'row')}")
def test_figure_matches_its_result_set(fig: dict[str, Any]) -> None:
    text = " ".join(fig["text"].split())
    assert _occurrences(text), f"no document says {text!r} any more: update tests/readme_figures.toml with it"
    cases = {name: _load(ref, name) for name, ref in fig["cases"].items()}
    if "exprs" in fig:  # every figure of the passage, in order
        numbers = _passage_figures(text)
        assert len(numbers) == len(fig["exprs"]), f"{text!r} holds the figures {numbers}, not {len(fig['exprs'])}"
        for number, expr in zip(numbers, fig["exprs"], strict=True):
            _check(number, expr, cases, text)
        return
    assert re.search(rf"(?<![\d.]){re.escape(fig['number'])}(?![\d])", text), f"{fig['number']!r} is not in {text!r}"
    _check(fig["number"], fig["expr"], cases, text)


_PAGE_FIGURES = [f for f in FIGURES["figure"] if "page" in f]


@functools.cache
def _pair_page(tree: Path) -> tuple[str, str]:
    """The GPU-pair page's name and Markdown, built once from the committed tree: no test checks that the
    copy under results/ is what `nox -s publish` writes now."""
    page = pair_page(tree)
    return page.name, page.markdown


@pytest.mark.parametrize("fig", _PAGE_FIGURES, ids=lambda f: f"{f['page']}|{f['row'][:40]}|{'-'.join(f['numbers'])}")
def test_a_figure_the_analysis_prints_is_on_its_page(fig: dict[str, Any], committed_results: Path) -> None:
    """The page as `nox -s publish` writes it from the committed sets now, not the copy under results/."""
    text = " ".join(fig["text"].split())
    assert _occurrences(text), f"no document says {text!r} any more: update tests/readme_figures.toml with it"
    name, markdown = _pair_page(committed_results)
    assert fig["page"] == name, f"{fig['page']!r}: only the GPU-pair page ({name}) is generated here"
    line = next((ln for ln in markdown.splitlines() if fig["row"] in ln), None)
    assert line is not None, f"{name} has no line holding {fig['row']!r}"
    for number in fig["numbers"]:
        found = rf"(?<![\d.]){re.escape(number)}(?![\d])"
        assert re.search(found, text), f"{number!r} is not in {text!r}"
        assert re.search(found, line), f"the docs say {number} in {text!r}; {name} prints {line!r}"


def _covered(doc: str) -> set[int]:
    """Positions in `doc` of the figures a passage of the toml accounts for."""
    out: set[int] = set()
    passages = [(f["text"], f.get("numbers") or ([f["number"]] if "number" in f else None)) for f in FIGURES["figure"]]
    passages += [(n["text"], None) for n in FIGURES.get("not_a_figure", [])]
    for text, numbers in passages:
        want = " ".join(text.split())
        for where, at in _occurrences(want):
            if where == doc:
                out.update(pos for pos, n in figures_in(TEXTS[doc])
                           if at <= pos < at + len(want) and (numbers is None or n in numbers))
    return out


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_every_figure_in_the_docs_traces_to_a_result_set(doc: str) -> None:
    covered = _covered(doc)
    loose = [f"{n!r} in ...{TEXTS[doc][max(0, pos - 50):pos + 20]}..." for pos, n in figures_in(TEXTS[doc])
             if pos not in covered]
    assert not loose, (f"{doc}: figures that no entry of tests/readme_figures.toml traces (add a [[figure]], or a "
                       "[[not_a_figure]] with the reason):\n" + "\n".join(loose))


def test_the_readme_answer_table_is_generated_from_the_result_sets(committed_results: Path) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.rewrite(text, readme.answer_table(committed_results)) == text, (
        "README.md's answer table differs from the result sets: python -m llmbench.publishing.readme README.md")


def test_every_not_a_figure_says_why() -> None:
    for entry in FIGURES.get("not_a_figure", []):
        assert entry.get("why") and _occurrences(entry["text"]), f"{entry['text']!r}: no reason, or in no document"


def test_every_committed_set_a_figure_names_exists() -> None:
    for alias, rel in FIGURES["sets"].items():
        assert is_tracked(ROOT / "results" / rel), f"{alias}: results/{rel} is not committed"
