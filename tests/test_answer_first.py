"""`compare` opens with the answer on one screen; every command's tables read at 80 columns and through a
pipe; `--dry-run` quotes what runs and says whose timings it used; sets of different suites are not
joined silently."""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path

import pytest
from test_compare_support import H100_ENV, case, h100_set, h200_set, metric, refs, result_set
from typer.testing import CliRunner

from llmbench.analysis.compare import compare
from llmbench.analysis.suitejoin import plan_joins
from llmbench.cli import app
from llmbench.commands.run import quote_summary
from llmbench.errors import UserError
from llmbench.harness.plan import MeasuredCase, case_time, reference_times
from llmbench.precision import DeviceInfo
from llmbench.report.answer_view import answer_tables
from llmbench.report.tables import Table
from llmbench.report.terminal import column_widths, one_line, result_table, to_terminal_text
from llmbench.results import save
from llmbench.suite import load_suite
from tests.conftest import tracked

ROOT = Path(__file__).resolve().parent.parent
H100 = ROOT / "results/h100-sxm-80gb"
H200 = ROOT / "results/h200-sxm-141gb"
H100_INFERENCE = H100 / "inference-llama3-8b-20261122T225654Z.json"
H200_INFERENCE = H200 / "inference-llama3-8b-20261123T035225Z.json"
H100_CEILINGS = H100 / "ceilings-20261122T032440Z.json"
H200_CEILINGS = H200 / "ceilings-20261122T041139Z.json"
H200_QUICKSTART = H200 / "quickstart-20261123T141420Z.json"
WIDTH = 80
NUMBER = re.compile(r"^[+-]?[\d,]+(\.\d+)?(x|%)?$")
runner = CliRunner()


def alone(tmp: Path, *files: Path) -> list[str]:
    """The sets as copies, each in a folder of its own under the working directory (no other run of their
    cases beside them: the answer is of these runs), with the committed folders as the noise floor."""
    out = []
    for k, f in enumerate(files):
        (tmp / str(k)).mkdir()
        (tmp / str(k) / f.name).write_bytes(f.read_bytes())
        out.append(f"{k}/{f.name}")
    os.chdir(tmp)  # the tests that call it chdir back (monkeypatch)
    return out + [a for d in (H100, H200) for a in ("--noise-floor", str(d), "--noise-floor",
                                                     str(d.parent / "spread" / d.name))]


def cli(*args: str | Path) -> tuple[int, str]:
    """A command as a user runs it through a pipe on an 80-column terminal: exit code and output (a bad
    input: 2 and its message, as `llmbench` prints it)."""
    res = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": str(WIDTH)})
    if isinstance(res.exception, UserError):
        return 2, str(res.exception)
    return res.exit_code, res.output


def assert_readable(text: str, tables: list[Table] | None = None) -> None:
    """No line wider than the terminal, no number broken across lines: every number of the output (and of
    the tables' cells, where given) is found whole."""
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= WIDTH, text
    cells = [c for t in tables or [] for r in t.rows for c in r]
    for token in (w.strip("[],;()") for c in cells for w in c.split()):
        if NUMBER.match(token):
            assert token in text, token
    for line, after in itertools.pairwise(lines):  # '1,' then '234' on the next line: a number cut
        assert not (re.search(r"\d[.,]$", line.rstrip()) and re.match(r"\d", after.strip())), (line, after)


@pytest.mark.slow
def test_compare_of_the_committed_inference_sets_opens_with_the_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path.cwd())
    code, text = cli("compare", *alone(tmp_path, H100_INFERENCE, H200_INFERENCE))
    assert code == 0, text
    lines = text.splitlines()
    assert len(lines) <= 46, text  # a screen: the answer, what it covers, the sides, the metrics, the warnings
    head = " ".join(" ".join(lines[:6]).split())
    assert lines[0] == "inference-llama3-8b: H200 SXM 141GB vs H100 SXM5 80GB"
    assert lines[1] == "Cases: inference-llama3-8b's 11 both GPUs ran ok (--all-cases: all 11 shared)."
    # the GPU cells only: 10 host-bound cells (short-prompt TTFT, host-bound decode) are shown apart
    assert "H200 SXM 141GB runs at 1.17x the speed of H100 SXM5 80GB, 95% interval [" in head
    assert "10 host-bound cells" in " ".join(text.split())
    # one run per side: the interval carries the spread between runs and machines measured on these GPUs
    assert "widened by the measured noise floor between runs and machines" in head
    assert "noise floor" in text.lower() and "h100-sxm-80gb" not in text  # GPUs by name; slugs in the details
    assert "llmbench commit differs" in text and "--all" in text
    assert_readable(text)


@pytest.mark.slow
def test_compare_all_shows_every_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path.cwd())
    given = alone(tmp_path, H100_INFERENCE, H200_INFERENCE)
    code, text = cli("compare", *given, "--all")
    assert code == 0, text
    assert text.index("runs at 1.17x") < text.index("Scenario generate")  # the answer still comes first
    assert_readable(text)
    code, md = cli("compare", *given, "--all", "-f", "markdown")
    cmp = compare(refs_of(H100_INFERENCE, H200_INFERENCE), 0)
    labels = {r.case for r in cmp.rows} | {n.case for n in cmp.one_sided}
    assert len(labels) == 62 and all(f"| {label} |" in md for label in labels)
    code, short = cli("compare", *given, "-f", "markdown")
    assert sum(f"| {label} |" in short for label in labels) == 5  # by default: the highest and lowest only


def refs_of(*paths: Path):  # type: ignore[no-untyped-def]
    from llmbench.analysis.runs import load_sets

    return load_sets(list(paths))


@pytest.mark.slow
def test_headline_keeps_working(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path.cwd())
    code, text = cli("compare", *alone(tmp_path, H100_CEILINGS, H200_CEILINGS), "--headline")
    assert code == 0, text
    assert "H200 SXM 141GB runs at 1.04x" in " ".join(text.split()[:40])
    assert len(text.splitlines()) <= 45


def test_the_answer_in_markdown_names_the_gpus_and_warns() -> None:
    cmp = compare(refs(h100_set(), h200_set()), 0)
    tables = answer_tables(cmp, warnings=["code paths differ: bf16 compiled decode fused on one side only"])
    from llmbench.report.tables import to_markdown

    md = to_markdown(tables)
    assert md.startswith("## quickstart: H200 SXM 141GB vs H100 SXM5 80GB\n\nH200 SXM 141GB runs at")
    warnings = md[md.index("## Warnings"):]
    assert warnings.index("code paths differ") < warnings.index("transformers version differs")
    assert "not in every result set" in warnings and "did not run ok on every side" in warnings


def test_the_json_summary_is_the_answer_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`-f json` holds what the answer prints, computed once: the overall ratio and its basis, the
    headline rows, every case ranked as the highest-and-lowest table ranks them, the warnings."""
    monkeypatch.chdir(Path.cwd())
    given = alone(tmp_path, H100_INFERENCE, H200_INFERENCE)
    code, text = cli("compare", *given)
    assert code == 0, text
    code, out = cli("compare", *given, "-f", "json")
    assert code == 0, out
    got = json.loads(out)["summary"]
    assert got["sides"] == ["H100 SXM5 80GB", "H200 SXM 141GB"] and got["baseline"] == "H100 SXM5 80GB"
    speed = got["speed"][1]
    flat = " ".join(text.split())
    assert f"runs at {speed['value']:.2f}x the speed" in flat and got["interval_basis"][1] == "noise floor"
    assert f"[{speed['ci95'][0]:.2f}, {speed['ci95'][1]:.2f}]" in flat
    cases = got["cases"]
    values = [c["speed"][1]["value"] for c in cases]
    assert len(cases) == 11 and values == sorted(values, reverse=True) and cases[0]["speed"][0] is None
    assert f"{values[0]:.2f}x" in text and f"{values[-1]:.2f}x" in text  # the highest and the lowest, printed
    assert {(g["scenario"], g["metric"]) for g in got["headline"]} >= {("generate", "speed")}
    assert any("llmbench commit differs" in w for w in got["warnings"])


def test_the_interval_basis_comes_from_the_ratio_where_it_has_one() -> None:
    cmp = compare(refs(h100_set(), h200_set()), 0)
    overall = next(g for g in cmp.geomeans if g.scenario == "overall" and g.metric == "speed")
    ratio = overall.ratios[1]
    assert ratio is not None
    ratio.basis = "noise floor"  # type: ignore[attr-defined]  # what the statistics set where they know it
    text = to_terminal_text(answer_tables(cmp))
    assert "widened by the measured noise floor" in " ".join(text.split())


def test_different_suites_are_refused_where_their_shared_cases_were_timed_differently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path.cwd())
    given = alone(tmp_path, H100_CEILINGS, H200_QUICKSTART)
    code, text = cli("compare", *given)
    assert code == 2
    flat = " ".join(text.split())
    assert "different settings" in flat and "ceilings" in flat and "quickstart" in flat and "--mix-suites" in flat
    code, text = cli("compare", *given, "--mix-suites")
    assert code == 0, text
    assert "joined on every case they share" in " ".join(text.splitlines()[1:5]) and "runs at 0.91x" in text


def test_different_suites_join_on_the_cases_timed_alike_and_say_so() -> None:
    a, b = h100_set(), h200_set()
    b.suite = "headline"
    for c in b.cases[1:]:
        c.settings = {"warmup_iters": 2, "timeout_s": 60}
    for c in a.cases:
        c.settings = {"warmup_iters": 5, "timeout_s": 30}
    b.cases[0].settings = {"warmup_iters": 5, "timeout_s": 900}  # a timeout is no measurement setting
    plan = plan_joins(refs(a, b))
    assert len(plan.groups) == 1
    kept = {c.id for s in plan.groups[0] for c in s.cases()}
    assert b.cases[0].id in kept and b.cases[1].id not in kept
    note = plan.notes[0][0]
    assert note.startswith("Suites differ (H100 SXM5 80GB: quickstart; H200 SXM 141GB: headline): joined on the 1")
    assert "left out" in note and "warmup_iters 5 vs 2" in note


def test_sets_of_several_suites_of_one_gpu_are_compared_suite_by_suite(tmp_path: Path) -> None:
    a, b, c = h100_set(), h100_set(), h100_set(suite="only-one")
    for i, rs in enumerate((a, b, c)):
        save(rs, tmp_path / f"{i}.json")
    code, text = cli("compare", *(tmp_path / f"{i}.json" for i in range(3)))
    assert code == 0, text
    assert "Not compared, no other result set of their suite: only-one (H100 SXM5 80GB)" in " ".join(text.split())


def test_sets_of_several_suites_of_two_gpus_are_one_comparison_joined_case_by_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path.cwd())
    """Each GPU is one side over its sets of every suite; a case both ran is compared where each GPU's chosen
    runs were timed with the same settings (quickstart times the ceilings gemm cases otherwise: left out)."""
    code, text = cli("compare", *alone(tmp_path, H100_CEILINGS, H100_INFERENCE, H200_CEILINGS, H200_INFERENCE,
                                       H200_QUICKSTART), "--all-cases")
    assert code == 0, text
    flat = " ".join(text.split())
    assert "H200 SXM 141GB runs at" in flat and "cases: gemm" in flat and "generate 11 (hf 11)" in flat
    assert "left out (--mix-suites joins them)" in flat


def test_columns_never_break_a_word_and_stack_when_they_cannot_fit() -> None:
    t = Table("t", ["case", "value"], [["precision=bf16 batch_size=32 input_len=2048", "1,234.5 n=30"]])
    widths = column_widths(t, 30)
    assert widths is not None and widths[0] >= len("input_len=2048") and widths[1] >= len("1,234.5")
    assert column_widths(t, 20) is None
    wide = Table("wide", [f"column {i}" for i in range(12)], [[f"{i * 1000.5:,.1f}" for i in range(12)]])
    text = to_terminal_text([wide], width=WIDTH)
    assert "column 3: 3,001.5" in text  # stacked: 'column: value' pairs
    assert_readable(text, [wide])


def test_a_reason_is_one_line() -> None:
    reason = "tf32 needs compute capability >= 8.0; this machine has no CUDA GPU (running on CPU AMD EPYC)"
    assert one_line(reason, 60) == "tf32 needs compute capability >= 8.0…"
    assert one_line("a\nb") == "a" and one_line(reason, 200) == reason
    long = "engine 'vllm' needs vllm, which is not installed: pip install 'llmbench[vllm]' (a CUDA build)"
    cut = one_line(long, 40)
    assert len(cut) <= 40 and cut.endswith("…") and " ".join(long.split()[:3]) in cut


def test_show_prints_a_legend_for_the_flag_mark(tmp_path: Path) -> None:
    flagged = metric("tflops", 700.0)
    flagged.flags = ["the energy window is too short to trust"]
    rs = result_set(H100_ENV, [case("gemm", {"precision": "bf16"}, {"tflops": flagged}),
                               case("gemm", {"precision": "fp8"}, status="skipped", reason="fp8 needs more")])
    path = tmp_path / "s.json"
    save(rs, path)
    code, text = cli("show", path)
    assert code == 0, text
    assert "(!)" in text and "(!) marks a flagged figure" in text and "fp8 needs more" in text
    assert result_table(rs, skipped=False).rows == [result_table(rs).rows[0]]  # run prints skips as they come


@pytest.mark.slow
def test_every_command_reads_at_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spread = tracked("results", "spread/h100-sxm-80gb/*.json")  # the committed runs, not a user's own
    monkeypatch.chdir(Path.cwd())
    (tmp_path / "given").mkdir()
    ceilings = alone(tmp_path / "given", H100_CEILINGS, H200_CEILINGS)  # these runs: no folder's others
    commands: list[tuple[str | Path, ...]] = [
        ("compare", *ceilings, "--all"),
        ("spread", *spread),
        ("project", H100_CEILINGS, "--to", "h200-sxm-141gb", "--validate", H200_CEILINGS),
        ("specs",),
        ("list",),
        ("show", H200_QUICKSTART),
        ("run", "quickstart", "--dry-run", "--cpu", "--out", tmp_path),
        ("compare", *ceilings, "--price", "h100-sxm-80gb=2", "--price", "h200-sxm-141gb=3"),
    ]
    for args in commands:
        code, text = cli(*args)
        assert code == 0, (args, text)
        assert_readable(text)


def test_serve_bench_points_are_never_cut() -> None:
    from llmbench.commands.serve_bench import results_table

    ok = case("serving", {"rate": 2.0, "concurrency": None},
              {"ttft_ms": metric("ttft_ms", 31.5), "output_tokens_per_s": metric("output_tokens_per_s", 2468.0)})
    failed = case("serving", {"rate": 64.0, "concurrency": None}, status="failed",
                  reason="ServerUnusable: the pre-flight request got HTTP 500\nTraceback ...")
    table = results_table([ok, failed], "serve-bench m at http://127.0.0.1:8000")
    text = to_terminal_text([table], width=WIDTH)
    assert "rate 2.0" in text and "rate 64.0" in text and "…" not in text.replace("500…", "")
    assert "failed: ServerUnusable: the pre-flight request got HTTP 500" in " ".join(text.split())
    assert_readable(text, [table])


def _gpu() -> DeviceInfo:
    return DeviceInfo("cuda", "NVIDIA H200", (9, 0), 139.8)


def test_a_case_this_device_skips_costs_nothing() -> None:
    cases = load_suite("quickstart").cases
    fp8 = next(c for c in cases if c.scenario == "gemm" and c.params_dict["precision"] == "fp8")
    cpu = DeviceInfo("cpu", "CPU test")
    quote = case_time(fp8, {}, cpu)
    assert (quote.seconds, quote.source) == (0.0, "skipped") and "compute capability" in quote.reason
    assert case_time(fp8, {}, _gpu()).seconds > 0


def test_a_quote_from_another_gpu_says_whose_timings_it_is(tmp_path: Path) -> None:
    rs = h100_set()
    for c in rs.cases:
        c.duration_s = 12.0
    save(rs, tmp_path / "h100-sxm-80gb" / "quickstart-20260101T000001Z.json")
    save(rs, tmp_path / "cpu-x86_64" / "quickstart-20260101T000001Z.json")
    on_h200 = reference_times(tmp_path, "h200-sxm-141gb", other_gpus=True)
    assert on_h200 and {m.gpu for m in on_h200.values()} == {"h100-sxm-80gb"}
    on_cpu = reference_times(tmp_path, "cpu-aarch64", other_gpus=True)  # a CPU never borrows a GPU's times
    assert {m.gpu for m in on_cpu.values()} == {"cpu-x86_64"}
    bf16 = next(c for c in load_suite("quickstart").cases if c.params_dict.get("precision") == "bf16")
    quote = case_time(bf16, {bf16.id: MeasuredCase(bf16.scenario, bf16.params_dict, 12.0, "h100-sxm-80gb")}, _gpu())
    assert quote_summary([quote], "h200-sxm-141gb") == "1 from H100 SXM5 80GB timings"


def test_oneshot_dry_run_on_a_cpu_never_quotes_a_gpu(tmp_path: Path) -> None:
    code, text = cli("oneshot", "--dry-run", "--cpu", "--out", tmp_path)
    assert code == 0, text
    flat = " ".join(text.split())
    assert "H100" not in flat and "H200" not in flat and "skipped here (no time)" in flat
    assert_readable(text)


def test_plan_measured_quote_names_this_gpu() -> None:
    c = load_suite("quickstart").cases[0]
    quote = case_time(c, {c.id: MeasuredCase(c.scenario, c.params_dict, 7.0, "h200-sxm-141gb")}, _gpu())
    assert quote_summary([quote], "h200-sxm-141gb") == "1 measured on H200 SXM 141GB"


def test_the_answer_of_three_gpus_reads_at_80_columns() -> None:
    sets = [h100_set(), h200_set(), h200_set()]
    sets[2].created_at = "2026-11-23T10:00:00Z"
    text = to_terminal_text(answer_tables(compare(refs(*sets), 0)), width=WIDTH)
    assert text.count("runs at") == 2
    assert "H200 SXM 141GB (2026-11-22)" in " ".join(text.split())
    assert_readable(text)


def test_sides_of_different_suites_timed_differently_are_refused() -> None:
    a, b = h100_set(), h200_set()
    b.suite = "other"
    for c in a.cases:
        c.settings = {"min_iters": 20}
    for c in b.cases:
        c.settings = {"min_iters": 5}
    with pytest.raises(UserError, match="min_iters 20 vs 5"):
        plan_joins(refs(a, b))
