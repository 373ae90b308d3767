"""The headline suite: cases of the committed suites (same ids, same settings), so that `compare` joins a
oneshot run with the committed H100/H200 result sets; the most important figures first."""

from __future__ import annotations

from pathlib import Path

from llmbench.harness.plan import reference_times
from llmbench.results import load
from llmbench.suite import CaseSpec, load_suite

SOURCES = ["ceilings", "inference-llama3-8b", "vllm-llama3-8b", "qlora-llama3", "trainer-variations", "fp8-linear",
           "fp8-kernel-tuning"]
GPUS = ("h100-sxm-80gb", "h200-sxm-141gb")  # the committed sets of each: conftest's committed_results


def _source_cases() -> dict[str, CaseSpec]:
    return {c.id: c for name in SOURCES for c in load_suite(name).cases}


def test_every_headline_case_is_a_case_of_a_committed_suite_with_its_settings() -> None:
    sources = _source_cases()
    for case in load_suite("headline").cases:
        assert case.id in sources, f"{case.label}: no case of {SOURCES} has these params"
        assert case.settings == sources[case.id].settings, f"{case.label}: settings differ from its source suite"


def test_the_transformers_fp8_cases_compile_without_torchaos_kernel_settings() -> None:
    """The measuring path of the headline's fp8 decode (docs/measurements.md, "What torchao's kernel tuning
    is worth"): each transformers fp8 case undoes torchao's process-wide inductor settings, and the GPU-pair
    workloads' fp8 rows are those cases, so the pages answer with the README table's runs."""
    from llmbench.references import workloads

    cases = load_suite("headline").cases
    fp8 = [c.params_dict for c in cases if c.scenario == "generate" and c.params_dict["engine"] == "hf"
           and c.params_dict["precision"] == "fp8"]
    assert sorted(p["batch_size"] for p in fp8) == [1, 8, 32]
    assert all(p["mode"] == "compiled" and p["library_kernel_settings"] is False for p in fp8)
    pair_fp8 = {w.ids[1] for w in workloads() if w.key in ("decode-b1", "decode-b32")}
    assert len(pair_fp8) == 2 and pair_fp8 <= {c.id for c in cases}


def test_every_transformers_case_joins_a_committed_result_set(committed_results: Path) -> None:
    measured = {c.id for slug in GPUS for p in (committed_results / slug).glob("*.json") for c in load(p).cases}
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


def test_order_answers_each_question_before_the_costly_cases() -> None:
    """Information per minute: the ceilings, then one cheap figure of each workload (decode at batch 1
    in bf16 and fp8, TTFT, QLoRA, Trainer, fp8 linear), then the engine (vLLM), the batches, and the
    transformers fp8 batches (the longest compilations) last, so a short budget drops those."""
    cases = load_suite("headline").cases
    kinds = [_kind(c) for c in cases]
    assert kinds[:7] == ["ceiling"] * 7
    decode = [c.params_dict for c in cases if _kind(c) == "decode"]
    assert [(p["precision"], p["batch_size"], p["mode"]) for p in decode[:2]] == [("bf16", 1, "compiled"),
                                                                                   ("fp8", 1, "compiled")]
    first_vllm = kinds.index("vllm")
    assert "training/fp8" in kinds[:first_vllm] and "training/fp8" not in kinds[first_vllm:]
    assert any(p["input_len"] == 2048 for p in (c.params_dict for c in cases[:first_vllm] if _kind(c) == "decode"))
    last = [c.params_dict for c in cases[-2:]]
    assert all(_kind(c) == "decode" for c in cases[-2:])
    assert {(p["precision"], p["batch_size"]) for p in last} == {("fp8", 8), ("fp8", 32)}
    batches = {(p["precision"], p["batch_size"]) for p in decode if p["mode"] == "compiled"}
    assert batches == {(pr, b) for pr in ("bf16", "fp8") for b in (1, 8, 32)}
    vllm = {(c.params_dict["precision"], c.params_dict["batch_size"]) for c in cases if _kind(c) == "vllm"}
    assert vllm == batches


def test_the_headline_shares_one_vllm_engine_per_precision() -> None:
    """share_engines: the vLLM cases of a precision form one share group (one engine start), adjacent in
    the suite; every other case runs alone."""
    from llmbench.harness.plan import share_groups
    from llmbench.precision import DeviceInfo

    suite = load_suite("headline")
    assert suite.share_engines
    units = share_groups(suite.cases, DeviceInfo("cuda", "NVIDIA H200", (9, 0), 139.8))
    groups = [[c.params_dict for c in u] for u in units if len(u) > 1]
    assert [{(p["engine"], p["precision"]) for p in g} for g in groups] == [{("vllm", "bf16")}, {("vllm", "fp8")}]
    assert [[p["batch_size"] for p in g] for g in groups] == [[1, 8, 32], [1, 8, 32]]
    assert [c.id for u in units for c in u] == [c.id for c in suite.cases]  # already in run order


def test_the_committed_sets_quote_the_headline_cases_for_a_budget(committed_results: Path) -> None:
    """On a fresh H100 or H200, `oneshot --budget` quotes each case from the committed result sets."""
    cases = [c for c in load_suite("headline").cases if c.params_dict.get("engine") != "vllm"]
    quoted = {slug: reference_times(committed_results, slug) for slug in GPUS}
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

    save(a, tmp_path / a.gpu_slug / "quickstart-20260101T000001Z.json")
    save(b, tmp_path / b.gpu_slug / "other-20260101T000001Z.json")
    times = reference_times(tmp_path, a.gpu_slug)
    ok = [c for c in a.cases if c.status == "ok"]
    assert ok and {times[c.id].seconds for c in ok} == {7.0}
    assert reference_times(tmp_path, "no-such-gpu") == {}
    other = reference_times(tmp_path, "no-such-gpu", other_gpus=True)  # a fresh GPU model: another's times
    assert {other[c.id].seconds for c in ok} == {7.0}
    b.cases[0].duration_s = 1.0
    save(b, tmp_path / "no-such-gpu" / "other-20260101T000002Z.json")  # its own measurement wins
    assert reference_times(tmp_path, "no-such-gpu", other_gpus=True)[b.cases[0].id].seconds == 1.0
