"""H200 over H100 asked seven ways over the committed runs: `compare` over the GPUs' folders, over the
headline globs, over every file named, over oneshot bundles; `versus` in a checkout and from the packaged
export in an empty folder; and the published page. Each covers the headline suite's cases by default and
prints one figure: the same runs, one rule (analysis/runs.py), one estimator (compare.runs_ratio), one
noise floor."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmbench import api
from llmbench.analysis import runs
from llmbench.analysis.compare import Comparison, Ratio
from llmbench.analysis.runs import tree_files, tree_sets
from llmbench.bundle import write_bundle
from llmbench.cli import app
from llmbench.publishing.pages import tree_page
from llmbench.publishing.publish import write_export

H100, H200 = "h100-sxm-80gb", "h200-sxm-141gb"
runner = CliRunner()


def _overall(cmp: Comparison) -> Ratio:
    got = next(g for g in cmp.geomeans if g.scenario == "overall" and g.metric == "speed").ratios[1]
    assert got is not None and got.ci is not None
    return got


def _text(r: Ratio) -> str:
    assert r.ci is not None
    return f"{r.value:.2f}x [{r.ci[0]:.2f}, {r.ci[1]:.2f}]"


def _compare(files: list[Path]) -> Comparison:
    result = api.compare(files)
    assert len(result.groups) == 1
    return result.groups[0].comparison


@pytest.mark.slow
def test_h200_over_h100_is_one_figure_however_asked(committed_results: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    tree = committed_results
    every = {g: tree_files(tree, g) for g in (H100, H200)}
    globs = [p for g in (H100, H200) for p in every[g] if p.name.startswith("headline-")]
    bundles = []
    for g in (H100, H200):
        sets = {name.replace("/", "_"): rs for name, rs in tree_sets(tree, [g])}
        bundles.append(write_bundle(tmp_path / f"{g}.tar.gz", sets))
    export = tmp_path / "measured"
    write_export(tree, export)

    page = tree_page(tree).compared[0]
    assert page.title.startswith("headline:") and page.cmp is not None
    want = _overall(page.cmp)
    ways: dict[str, Ratio | None] = {
        "compare over folders": _overall(_compare([tree / H100, tree / H200])),
        "compare over the headline globs": _overall(_compare(globs)),
        "compare over every file": _overall(_compare([*every[H100], *every[H200]])),
        "compare over bundles": _overall(_compare(bundles)),
    }
    here = api.versus(gpus=f"{H200},{H100}", results=tree)
    ways["versus in a checkout"] = here.suite.overall.ratios[1] if here.suite and here.suite.overall else None
    monkeypatch.setattr(runs, "MEASURED_DATA", export)
    monkeypatch.chdir(tmp_path)
    shipped = api.versus(gpus=f"{H200},{H100}", results=None)
    ways["versus from the packaged export"] = (shipped.suite.overall.ratios[1]
                                               if shipped.suite and shipped.suite.overall else None)
    assert "the runs llmbench ships" in shipped.read
    got = {k: (r.value, r.ci) if r is not None else None for k, r in ways.items()}
    assert got == dict.fromkeys(ways, (want.value, want.ci)), got
    # the committed page prints it: its headline section's first row
    md = (Path(__file__).resolve().parents[1] / "results" / "h100-vs-h200.md").read_text()
    section = md.split("### headline:", 1)[1]
    assert f"| all workloads | {_text(want)} |" in section.split("###", 1)[0]


@pytest.mark.slow
def test_compare_of_two_gpus_states_its_cases_and_widens_on_request(committed_results: Path) -> None:
    """The second line says which cases the answer covers; --all-cases covers every shared one; the
    headline globs read the other sets of the GPUs' folders that hold the headline's cases."""
    cwd = os.getcwd()
    os.chdir(committed_results.parent)
    try:
        globs = [str(p.relative_to(committed_results.parent)) for g in (H100, H200)
                 for p in tree_files(committed_results, g) if p.name.startswith("headline-")]
        out = runner.invoke(app, ["compare", *globs])
        wide = runner.invoke(app, ["compare", "--all-cases", f"results/{H100}", f"results/{H200}"])
    finally:
        os.chdir(cwd)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    flat = out.output.replace("\n", " ")
    assert lines[1].startswith("Cases: headline's 28 both GPUs ran ok (--all-cases: all ")
    assert "beside those given" in flat
    assert all(len(line) <= 80 for line in out.output.splitlines())
    assert wide.exit_code == 0, wide.output
    assert wide.output.splitlines()[1].startswith("Cases: every case")
    n = [int(re.search(r"speed cells over (\d+) cases", o.output.replace("\n", " ")).group(1))  # type: ignore[union-attr]
         for o in (out, wide)]
    assert n[0] < n[1]
