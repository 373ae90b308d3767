"""publish(): the H100-vs-H200 page and the HTML report from result sets in a folder; published figures."""

from __future__ import annotations

from pathlib import Path

from test_compare_support import h100_set, h200_set

from llmbench.ids import case_id
from llmbench.report.publish import publish
from llmbench.report.published import published_sets
from llmbench.results import load, save

RESULTS = Path(__file__).resolve().parents[1] / "results"


def test_publish_compares_newest_sets_of_common_suites(tmp_path: Path) -> None:
    save(h100_set(created_at="2026-11-01T00:00:00Z"), tmp_path / "h100-sxm-80gb" / "quickstart-old.json")
    save(h100_set(created_at="2026-11-22T00:00:00Z"), tmp_path / "h100-sxm-80gb" / "quickstart-new.json")
    save(h200_set(), tmp_path / "h200-sxm-141gb" / "quickstart-1.json")
    save(h100_set(suite="only-h100"), tmp_path / "h100-sxm-80gb" / "only-h100-1.json")
    save(h200_set(source=None), tmp_path / "published" / "h200-sxm-141gb" / "x.json")
    pub = load(tmp_path / "published" / "h200-sxm-141gb" / "x.json")
    pub.source.kind, pub.source.citation = "published", "a vendor table"
    save(pub, tmp_path / "published" / "h200-sxm-141gb" / "x.json")
    md, html = publish(tmp_path)
    text = md.read_text()
    assert "h100-sxm-80gb/quickstart-new.json" in text and "quickstart-old" not in text
    assert "measured on one machine only: only-h100" in text
    assert "Geometric means of ratios" in text and "[" in text  # CIs
    page = html.read_text()
    assert "Published reference: quickstart" in page and 'class="tag published"' in page


def test_publish_with_nothing_to_compare(tmp_path: Path) -> None:
    md, html = publish(tmp_path)
    assert "No suite has a measured result set on both machines" in md.read_text() and html.exists()


def test_committed_published_sets_match_their_sources() -> None:
    for rel, rs in published_sets().items():
        committed = load(RESULTS / "published" / rel)
        assert committed.model_dump() == rs.model_dump(), f"regenerate {rel} with llmbench.report.published"
        assert committed.source.kind == "published" and committed.source.citation
        for c in committed.cases:
            assert c.id == case_id(c.scenario, c.params)


def test_a_headline_set_is_published_against_the_other_gpus_cases_of_the_same_ids(tmp_path: Path) -> None:
    """The headline suite ran on one GPU only; its cases have the ids of the other GPU's suites' cases,
    so the page compares it with those, and adds costs at the example prices where the file exists."""
    save(h100_set(suite="headline"), tmp_path / "results" / "h100-sxm-80gb" / "headline-1.json")
    save(h200_set(suite="quickstart"), tmp_path / "results" / "h200-sxm-141gb" / "quickstart-1.json")
    prices = tmp_path / "deploy" / "prices.example.toml"
    prices.parent.mkdir()
    prices.write_text('[h100-sxm-80gb]\nusd_per_hour = 2.0\n\n[h200-sxm-141gb]\nusd_per_hour = 3.0\n')
    md, _ = publish(tmp_path / "results")
    text = md.read_text()
    assert "headline: H100 vs H200 (cases of the same ids" in text
    assert "Cost at the given hourly prices" in text and "$ per 1M output tokens" in text
    assert "measured on one machine only: headline" not in text


def test_spread_runs_are_pooled_into_the_published_side(tmp_path: Path) -> None:
    """Runs kept under results/spread/<slug>/ join the published side of their suite, so its cases
    carry the spread between runs (the noise floor) and intervals that include it."""
    save(h100_set(), tmp_path / "h100-sxm-80gb" / "quickstart-1.json")
    save(h200_set(), tmp_path / "h200-sxm-141gb" / "quickstart-1.json")
    for i, scale in enumerate((0.98, 1.02)):
        run = h100_set(created_at=f"2026-11-24T0{i}:00:00Z")
        for c in run.cases:
            for m in c.metrics.values():
                m.value *= scale
                m.samples = [v * scale for v in m.samples] if m.samples else m.samples
        save(run, tmp_path / "spread" / "h100-sxm-80gb" / f"quickstart-{i}.json")
    md, html = publish(tmp_path)
    text = md.read_text()
    assert "Between-run spread" in text and "(3 runs)" in text
    assert "noise floor</th>" in html.read_text()
