"""The headline suite: cases of the committed suites (same ids, same settings), so that `compare` joins a
oneshot run with the committed H100/H200 result sets; the most important figures first."""

from __future__ import annotations

from pathlib import Path

from llmbench.harness.plan import reference_times
from llmbench.results import load
from llmbench.suite import CaseSpec, load_suite
from tests.conftest import ROOT

SOURCES = ["ceilings", "inference-llama3-8b", "vllm-llama3-8b", "qlora-llama3", "trainer-variations", "fp8-linear"]
COMMITTED = [ROOT / "results" / "h100-sxm-80gb", ROOT / "results" / "h200-sxm-141gb"]


def _source_cases() -> dict[str, CaseSpec]:
    return {c.id: c for name in SOURCES for c in load_suite(name).cases}


def test_every_headline_case_is_a_case_of_a_committed_suite_with_its_settings() -> None:
    sources = _source_cases()
    for case in load_suite("headline").cases:
        assert case.id in sources, f"{case.label}: no case of {SOURCES} has these params"
        assert case.settings == sources[case.id].settings, f"{case.label}: settings differ from its source suite"


def test_every_transformers_case_joins_a_committed_result_set() -> None:
    measured = {c.id for folder in COMMITTED for p in folder.glob("*.json") for c in load(p).cases}
    for case in load_suite("headline").cases:
        if case.params_dict.get("engine") != "vllm":  # no vLLM result set is committed yet
            assert case.id in measured, f"{case.label} is in no committed result set"


def _kind(case: CaseSpec) -> str:
    p = case.params_dict
    if case.scenario in ("gemm", "bandwidth"):
        return "ceiling"
    if case.scenario == "generate":
        return "vllm" if p["engine"] == "vllm" else "decode"
    return "training/fp8"


def test_order_ceilings_then_decode_then_training_then_vllm() -> None:
    cases = load_suite("headline").cases
    kinds = [_kind(c) for c in cases]
    order = ["ceiling", "decode", "training/fp8", "vllm"]
    assert kinds == sorted(kinds, key=order.index)
    decode = [c.params_dict for c in cases if _kind(c) == "decode"]
    first = decode[0]
    assert (first["precision"], first["batch_size"], first["mode"]) == ("bf16", 1, "compiled")
    assert (decode[1]["precision"], decode[1]["batch_size"]) == ("fp8", 1)
    ttft = next(i for i, p in enumerate(decode) if p["input_len"] == 2048)
    fp8_batches = [i for i, p in enumerate(decode) if p["precision"] == "fp8" and p["batch_size"] > 1]
    assert ttft < min(fp8_batches)  # the longest compilations come last
    batches = {(p["precision"], p["batch_size"]) for p in decode if p["mode"] == "compiled"}
    assert batches == {(pr, b) for pr in ("bf16", "fp8") for b in (1, 8, 32)}
    vllm = {(c.params_dict["precision"], c.params_dict["batch_size"]) for c in cases if _kind(c) == "vllm"}
    assert vllm == batches


def test_the_committed_sets_quote_the_headline_cases_for_a_budget() -> None:
    """On a fresh H100 or H200, `oneshot --budget` quotes each case from the committed result sets."""
    cases = [c for c in load_suite("headline").cases if c.params_dict.get("engine") != "vllm"]
    quoted = {folder.name: reference_times(folder.parent, folder.name) for folder in COMMITTED}
    for case in cases:
        assert any(case.id in q for q in quoted.values()), case.label
    h100 = quoted["h100-sxm-80gb"]
    assert all(c.id in h100 for c in cases if c.scenario in ("gemm", "bandwidth", "generate"))


def test_reference_times_take_the_longest_of_several_sets(tmp_path: Path) -> None:
    from test_compare_support import h100_set

    a, b = h100_set(), h100_set()
    for c in a.cases:
        c.duration_s = 5.0
    for c in b.cases:
        c.duration_s = 7.0
    b.suite = "other"
    from llmbench.results import save

    save(a, tmp_path / a.gpu_slug / "quickstart-1.json")
    save(b, tmp_path / b.gpu_slug / "other-1.json")
    times = reference_times(tmp_path, a.gpu_slug)
    ok = [c for c in a.cases if c.status == "ok"]
    assert ok and {times[c.id].seconds for c in ok} == {7.0}
    assert reference_times(tmp_path, "no-such-gpu") == {}
    other = reference_times(tmp_path, "no-such-gpu", other_gpus=True)  # a fresh GPU model: another's times
    assert {other[c.id].seconds for c in ok} == {7.0}
    b.cases[0].duration_s = 1.0
    save(b, tmp_path / "no-such-gpu" / "other-2.json")  # its own measurement wins
    assert reference_times(tmp_path, "no-such-gpu", other_gpus=True)[b.cases[0].id].seconds == 1.0
