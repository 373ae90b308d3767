"""Cost at hourly prices: the arithmetic on known figures, price parsing, and compare/report with prices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from test_compare_support import H100_ENV, H200_ENV, case, metric, result_set
from typer.testing import CliRunner

from llmbench.analysis.cost import break_even_price, cost_per
from llmbench.analysis.prices import first_list_prices, list_prices, load_prices, parse_price, resolve_prices
from llmbench.commands import compare, report
from llmbench.errors import UserError
from llmbench.hardware.specs import lookup
from llmbench.results import load, save

runner = CliRunner()


def test_cost_per_unit_on_known_figures() -> None:
    # 1000 tok/s at $3.60/h: 3.6 M tokens per dollar-hour -> $1.00 per 1M tokens
    assert cost_per(3.60, 1000.0, 1e6) == pytest.approx(1.00)
    # 2 samples/s at $7.20/h: 7200 samples per hour -> $0.001 per sample
    assert cost_per(7.20, 2.0) == pytest.approx(0.001)
    # a 100M-token fine-tuning run at 10,000 tok/s takes 10,000 s = 2.78 h -> $10.00 at $3.60/h
    assert cost_per(3.60, 10_000.0, 1e8) == pytest.approx(10.0)
    with pytest.raises(ValueError):
        cost_per(1.0, 0.0)


def test_break_even_price_makes_costs_equal() -> None:
    # an A100 at $2.00/h doing 1000 tok/s; an H100 doing 2500 tok/s stops paying above $5.00/h
    even = break_even_price(2.00, 1000.0, 2500.0)
    assert even == pytest.approx(5.00)
    assert cost_per(even, 2500.0, 1e6) == pytest.approx(cost_per(2.00, 1000.0, 1e6))
    assert cost_per(4.00, 2500.0) < cost_per(2.00, 1000.0) < cost_per(6.00, 2500.0)


def test_parse_price() -> None:
    assert parse_price("h100-sxm-80gb=2.49") == ("h100-sxm-80gb", parse_price("h100-sxm-80gb=$2.49")[1])
    assert parse_price(" a100-sxm-80gb = 1.29")[1].usd_per_hour == 1.29
    for bad, message in [("h100", "SLUG=USD"), ("=2", "SLUG=USD"), ("h100=cheap", "not a price"),
                         ("h100=-1", "positive"), ("h100=nan", "positive")]:
        with pytest.raises(UserError, match=message):
            parse_price(bad)


def test_prices_file(tmp_path: Path) -> None:
    good = tmp_path / "p.toml"
    good.write_text('[h100-sxm-80gb]\nusd_per_hour = 2.49\nprovider = "X"\n'
                    'source = "https://x"\nchecked = "2026-01-02"\n')
    p = load_prices(good)["h100-sxm-80gb"]
    assert p.usd_per_hour == 2.49 and p.origin() == "X, https://x, checked 2026-01-02"
    for text, message in [
        ("[a]\nusd = 1\n", "unknown key 'usd'; valid: usd_per_hour"),
        ("[a]\nprovider = 'x'\n", "usd_per_hour is missing"),
        ("a = 1\n", "expected a table"),
        ("[a\n", "not valid TOML"),
        ("[a]\nusd_per_hour = 0\n", "positive"),
    ]:
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(UserError, match=message):
            load_prices(bad)
    with pytest.raises(UserError, match="no such file"):
        load_prices(tmp_path / "none.toml")


def test_cli_price_overrides_the_file_and_an_unknown_slug_names_the_valid_ones(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text("[h100-sxm-80gb]\nusd_per_hour = 3\n[b200-180gb]\nusd_per_hour = 6\n")
    got = resolve_prices(["h100-sxm-80gb=2.5"], f, ["h100-sxm-80gb", "h200-sxm-141gb"])
    assert {k: v.usd_per_hour for k, v in got.items()} == {"h100-sxm-80gb": 2.5}  # the file's b200 is not in the sets
    message = "no result set is of GPU 'a100-sxm-80gb'; valid: h100-sxm-80gb, h200-sxm-141gb"
    with pytest.raises(UserError, match=message):
        resolve_prices(["a100-sxm-80gb=1.29"], None, ["h100-sxm-80gb", "h200-sxm-141gb"])


def test_each_list_price_says_where_it_came_from_and_the_first_of_each_gpu_prices_the_pages() -> None:
    listed = list_prices()
    assert listed
    for slug, p in listed:
        assert lookup(slug) is not None, slug  # a GPU of the spec table
        assert p.provider and p.offer and p.source.startswith("https://") and p.checked, slug
    first = first_list_prices()
    assert set(first) == {slug for slug, _ in listed}
    assert all(first[slug] == next(p for s, p in listed if s == slug) for slug in first)


def _sets(tmp_path: Path) -> tuple[Path, Path]:
    """Two small sets: one generate case (1000 vs 2500 output tok/s) and one training case."""
    def build(env: dict, tps: float, sps: float, seed: int) -> object:
        return result_set(env, [
            case("generate", {"precision": "bf16", "batch_size": 8},
                 {"output_tokens_per_s": metric("output_tokens_per_s", tps, seed=seed)}),
            case("train", {"precision": "bf16"},
                 {"train_samples_per_s": metric("train_samples_per_s", sps, samples=False),
                  "train_tokens_per_s": metric("train_tokens_per_s", sps * 1000, samples=False)}),
        ])
    a, b = tmp_path / "a100.json", tmp_path / "h100.json"
    a100_env = {**H200_ENV, "gpu": {**H200_ENV["gpu"], "slug": "a100-sxm-80gb", "name": "NVIDIA A100-SXM4-80GB"}}
    save(build(a100_env, 1000.0, 4.0, 1), a)  # type: ignore[arg-type]
    save(build(H100_ENV, 2500.0, 10.0, 2), b)  # type: ignore[arg-type]
    return a, b


@pytest.fixture
def app() -> typer.Typer:
    a = typer.Typer()
    compare.register(a)
    report.register(a)
    return a


def test_compare_with_prices_adds_costs_and_break_even(app: typer.Typer, tmp_path: Path) -> None:
    a, b = _sets(tmp_path)
    out = tmp_path / "c.json"
    res = runner.invoke(app, ["compare", str(a), str(b), "--price", "a100-sxm-80gb=2", "--price", "h100-sxm-80gb=4",
                              "--run-tokens", "36000000", "-f", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = {r["unit"]: r for r in json.loads(out.read_text())["cost"]["rows"]}
    tokens = rows["$ per 1M output tokens"]
    # A100: $2/h / (1000 tok/s * 3600) * 1e6 = $0.556; H100: $4/h at 2500 tok/s = $0.444
    assert tokens["costs_usd"] == pytest.approx([2e6 / 3.6e6, 4e6 / 9e6], rel=1e-3)
    even = tokens["break_even_usd_per_hour"][1]
    assert even["value"] == pytest.approx(5.0, rel=0.02)  # $2 x 2.5 (medians of noisy samples)
    assert even["ci95"][0] <= even["value"] <= even["ci95"][1]
    assert rows["$ per training sample"]["costs_usd"] == pytest.approx([2 / 14400, 4 / 36000])
    assert rows["$ per training sample"]["break_even_usd_per_hour"][1]["value"] == pytest.approx(5.0)
    # 36M tokens at 4000 tok/s = 2.5 h at $2/h; at 10,000 tok/s = 1 h at $4/h
    assert rows["$ per fine-tuning run (36,000,000 training tokens)"]["costs_usd"] == pytest.approx([5.0, 4.0])
    md = runner.invoke(app, ["compare", str(a), str(b), "--price", "a100-sxm-80gb=2", "-f", "markdown"])
    assert md.exit_code == 0 and "## Cost at the given hourly prices" in md.output
    assert "no price for h100-sxm-80gb" in md.output and "$5.00" in md.output  # break-even needs only the baseline's


def test_a_case_on_two_gpus_costs_both_gpus_hours(app: typer.Typer, tmp_path: Path) -> None:
    """A tensor-parallel (or replica) case pays for every GPU it holds; the break-even stays per GPU-hour."""
    sides = []
    for name, env, tps in (("a", {**H200_ENV, "gpu": {**H200_ENV["gpu"], "slug": "a100-sxm-80gb"}}, 1000.0),
                           ("b", H100_ENV, 2500.0)):
        p = tmp_path / f"{name}.json"
        save(result_set(env, [case("generate", {"model": "tiny-llama", "batch_size": 8, "placement": {"gpus": 2}},
                                   {"output_tokens_per_s": metric("output_tokens_per_s", tps, seed=3)})]), p)
        sides.append(str(p))
    out = tmp_path / "c.json"
    res = runner.invoke(app, ["compare", *sides, "--price", "a100-sxm-80gb=2", "--price", "h100-sxm-80gb=4",
                              "-f", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    (row,) = json.loads(out.read_text())["cost"]["rows"]
    assert row["gpus"] == [2, 2]
    assert row["costs_usd"] == pytest.approx([2 * 2e6 / 3.6e6, 2 * 4e6 / 9e6], rel=0.02)
    assert row["break_even_usd_per_hour"][1]["value"] == pytest.approx(5.0, rel=0.02)


def test_a_pooled_side_is_priced_at_its_pooled_rate(app: typer.Typer, tmp_path: Path) -> None:
    """Two runs of the H100 side (2000 and 3000 output tok/s, one recorded code path): the cost and the
    break-even use the pooled rate (the median of the runs' medians, 2500), not the first run's, and
    the break-even interval is the pooled ratio's (which holds the between-run spread)."""
    a, _ = _sets(tmp_path)
    runs = []
    for i, tps in enumerate((2000.0, 3000.0)):
        rs = result_set({**H100_ENV, "gpu": {**H100_ENV["gpu"], "id_hash": f"m{i}"}}, [
            case("generate", {"precision": "bf16", "batch_size": 8},
                 {"output_tokens_per_s": metric("output_tokens_per_s", tps, samples=False)})],
            created_at=f"2026-11-2{i + 2}T10:00:00Z")
        rs.cases[0].code_path = {"engine": "hf", "mode": "eager"}  # runs of no recorded path would not pool
        save(rs, tmp_path / f"h100-{i}.json")
        runs.append(tmp_path / f"h100-{i}.json")
    base = tmp_path / "a100-single.json"
    save(result_set(load(a).env, [  # the A100 side at exactly 1000 tok/s
        case("generate", {"precision": "bf16", "batch_size": 8},
             {"output_tokens_per_s": metric("output_tokens_per_s", 1000.0, samples=False)})]), base)
    out = tmp_path / "c.json"
    res = runner.invoke(app, ["compare", str(base), *map(str, runs), "--pool", "--price", "a100-sxm-80gb=2",
                              "--price", "h100-sxm-80gb=4", "-f", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    row = next(r for r in data["comparison"]["rows"] if r["metric"] == "output_tokens_per_s")
    assert row["values"] == [1000.0, 2500.0] and row["runs"] == [1, 2]
    (cost,) = data["cost"]["rows"]
    assert cost["costs_usd"] == pytest.approx([cost_per(2, 1000.0, 1e6), cost_per(4, 2500.0, 1e6)])
    even = cost["break_even_usd_per_hour"][1]
    assert even["value"] == pytest.approx(5.0)  # $2 x 2500/1000; run 1 alone would say $4
    assert even["ci95"] == pytest.approx([2 * x for x in row["ratios"][1]["ci95"]])
    assert even["ci95"][0] < 4.0 and even["ci95"][1] > 6.0  # the runs' spread, not a single run's


def test_headline_compare_still_prices_a_rate_that_is_not_a_headline(app: typer.Typer, tmp_path: Path) -> None:
    """--headline keeps generate's headline metrics only (output tok/s is not one); the cost table
    still prices it."""
    a, b = _sets(tmp_path)
    out = tmp_path / "c.json"
    res = runner.invoke(app, ["compare", str(a), str(b), "--headline", "--price", "a100-sxm-80gb=2",
                              "-f", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert "$ per 1M output tokens" in {r["unit"] for r in data["cost"]["rows"]}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--price", "a100-40gb=1"], "valid: a100-sxm-80gb, h100-sxm-80gb"),
        (["--price", "h100-sxm-80gb=free"], "not a price"),
        (["--prices", "missing.toml"], "no such file"),
    ],
)
def test_price_errors_exit_2_and_write_nothing(
    app: typer.Typer, tmp_path: Path, extra: list[str], message: str
) -> None:
    a, b = _sets(tmp_path)
    out = tmp_path / "never.md"
    res = runner.invoke(app, ["compare", str(a), str(b), *extra, "-f", "markdown", "-o", str(out)])
    assert isinstance(res.exception, UserError) and message in str(res.exception), res.output
    assert not out.exists()


def test_report_with_prices_has_the_cost_table(app: typer.Typer, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="llmbench report needs matplotlib: pip install 'llmbench[report]'")
    a, b = _sets(tmp_path)
    html = tmp_path / "r.html"
    res = runner.invoke(app, ["report", str(a), str(b), "--price", "a100-sxm-80gb=2", "--price",
                              "h100-sxm-80gb=4", "--out", str(html)])
    assert res.exit_code == 0, res.output
    text = html.read_text()
    assert "Cost at the given hourly prices" in text and "$0.444" in text
