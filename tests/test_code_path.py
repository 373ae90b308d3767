"""The code path each case ran: recorded by the engine, checked against what each precision and mode
should run, and compared between result sets (a changed path is flagged, never silent).

bf16 compiled decode once stopped fusing its q/k/v and gate/up projections (fusion happened only while
converting to another precision) and nothing said so: the first tests here fail on that code."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from test_compare_support import H100_ENV, H200_ENV, case, metric, refs, result_set

from llmbench.analysis.compare import compare
from llmbench.engines.base import LoadOptions, ModelRef
from llmbench.engines.hf import HFEngine, HFOptions
from llmbench.harness.worker import run_case
from llmbench.precision import PRECISIONS, DeviceInfo, unsupported_reason
from llmbench.report.views import comparison_tables

CPU = DeviceInfo("cpu", "CPU")
CPU_PRECISIONS = [p for p in PRECISIONS if unsupported_reason(p, CPU) is None]
if importlib.util.find_spec("torchao") is not None and "int8" not in CPU_PRECISIONS:
    CPU_PRECISIONS.append("int8")  # torchao's int8 weight-only runs on a CPU


def load(precision: str, mode: str, **options: Any) -> Any:
    engine = HFEngine(HFOptions(name="hf", mode=mode, **options))  # type: ignore[arg-type]
    return engine.load(ModelRef(model="tiny-llama"), LoadOptions(precision=precision), CPU)


@pytest.mark.slow
@pytest.mark.parametrize("precision", CPU_PRECISIONS)
@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_compiled_mode_fuses_in_every_precision_and_eager_never_does(precision: str, mode: str) -> None:
    session = load(precision, mode)
    want = 2 * session.model.config.num_hidden_layers if mode == "compiled" else 0  # q/k/v and gate/up a layer
    assert session.fused_groups == want
    path = session.code_path()
    assert path["fused_projection_groups"] == want
    assert path["engine"] == "hf" and path["mode"] == mode
    assert ("quantized" in path) == (precision != "bf16")


@pytest.mark.slow
def test_the_unfused_layout_is_asked_for_explicitly() -> None:
    session = load("bf16", "compiled", fuse=False)
    assert session.fused_groups == 0 and session.code_path()["fused_projection_groups"] == 0


def run(**params: Any) -> dict[str, Any]:
    from llmbench.suite import case_from

    values = {"model": "tiny-llama", "batch_size": 1, "input_len": 4, "output_len": 3, **params}
    settings = {"warmup_iters": 0, "min_iters": 2, "min_seconds": 0.0}
    return run_case(case_from("generate", values, settings).worker_spec("cpu"))


def test_a_generate_case_records_the_path_it_ran() -> None:
    r = run()
    assert r["status"] == "ok", r.get("traceback")
    path = r["code_path"]
    assert path["decode_loop"] == "transformers generate()" and path["kv_cache"] == "dynamic"
    assert path["fused_projection_groups"] == 0 and path["weights"] == "bf16 weights"
    assert "compile" not in path


@pytest.mark.parametrize(("scenario", "params", "expected"), [
    ("gemm", {"precision": "fp32", "shape": [64, 64, 64]}, {"call": "torch.matmul(A, B, out=C)", "tf32": False}),
    ("bandwidth", {"kind": "host", "size_mib": 1},
     {"call": "Tensor.copy_(non_blocking=False)", "counted": "bytes read + written"}),
])
def test_ceiling_cases_record_the_call_they_timed(scenario: str, params: dict[str, Any],
                                                   expected: dict[str, Any]) -> None:
    r = run_case({"scenario": scenario, "params": params,
                  "settings": {"warmup_iters": 0, "min_iters": 2, "min_seconds": 0.0}, "device": "cpu"})
    assert r["status"] == "ok", r.get("traceback")
    assert r["code_path"] == expected


@pytest.mark.slow
# one pytest-xdist worker for both compilations of this graph (bf16, batch 1, 4 in, 3 out), the other being
# test_generate_run.py's: the second reuses what the first's process compiled, where a cold CPU compile of
# it (CI's inductor cache starts empty) is most of a minute
@pytest.mark.xdist_group("tiny_llama_bf16_compile")
def test_a_compiled_case_records_fusion_compilation_and_its_compile_cache(tmp_path: Any,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    r = run(mode="compiled")
    assert r["status"] == "ok", r.get("traceback")
    path = r["code_path"]
    assert path["fused_projection_groups"] > 0 and path["kv_cache"] == "static"
    assert path["compile"]["backend"] == "inductor"
    assert r["info"]["compile_cache_state"] in ("cold", "warm", "partly warm")
    # where the first compiled call went: the phases add up to that call's wall time, and Dynamo traced
    phases = r["info"]["compile_phases_s"]
    assert set(phases) == {"dynamo", "aot_autograd", "inductor", "kernel_tuning", "rest_of_call"}
    assert phases["dynamo"] > 0 and min(phases.values()) >= 0
    assert sum(phases.values()) == pytest.approx(r["metrics"]["compile_s"]["value"], rel=0.05, abs=0.05)


def test_fuse_false_is_refused_where_it_means_nothing() -> None:
    from llmbench.errors import SuiteError
    from llmbench.suite import case_from

    with pytest.raises(SuiteError, match="fuse = false applies to mode = 'compiled' only"):
        case_from("generate", {"model": "tiny-llama", "engine": {"name": "hf", "fuse": False}})  # eager never fuses
    with pytest.raises(SuiteError, match="valid keys: mode, tensor_parallel, gpu_memory_utilization"):
        case_from("generate", {"model": "tiny-llama", "engine": {"name": "vllm", "fuse": False}})  # hf's option
    unfused = case_from("generate", {"model": "tiny-llama",
                                     "engine": {"name": "hf", "mode": "compiled", "fuse": False}})
    assert unfused.engine.fuse is False and unfused.params_dict["fuse"] is False  # type: ignore[union-attr]


def _decode(path: dict[str, Any] | None, value: float, seed: int = 0) -> Any:
    c = case("generate", {"model": "llama-3-8b", "batch_size": 1, "mode": "compiled"},
             {"decode_tokens_per_s": metric("decode_tokens_per_s", value, seed=seed)})
    if path is not None:
        c.code_path = path
    return c


FUSED = {"engine": "hf", "mode": "compiled", "fused_projection_groups": 64, "top_kernels": ["a"]}


def test_compare_flags_a_pair_whose_code_paths_differ() -> None:
    h100 = result_set(H100_ENV, [_decode({**FUSED, "fused_projection_groups": 0}, 150.0)])
    h200 = result_set(H200_ENV, [_decode({**FUSED, "top_kernels": ["b"]}, 190.0, seed=1)])
    cmp = compare(refs(h100, h200))
    assert [n.keys for n in cmp.code_paths] == [["fused_projection_groups"]]  # kernel names are diagnostics
    warnings = cmp.code_path_warnings()
    assert len(warnings) == 1
    assert "1 of 1 joined cases ran different code paths (fused_projection_groups)" in warnings[0]
    table = next(t for t in comparison_tables(cmp) if t.title == "Code paths that differ")
    assert table.rows[0][1:] == ["fused_projection_groups", "0", "64"]
    assert cmp.to_dict()["code_paths"][0]["differing_keys"] == ["fused_projection_groups"]


def test_compare_says_where_no_code_path_was_recorded_and_is_quiet_when_paths_agree() -> None:
    old = result_set(H100_ENV, [_decode(None, 150.0)])
    new = result_set(H200_ENV, [_decode(FUSED, 190.0, seed=1)])
    warnings = compare(refs(old, new)).code_path_warnings()
    assert len(warnings) == 1 and "recorded their code path in some sets but not in" in warnings[0]
    neither = compare(refs(old, result_set(H200_ENV, [_decode(None, 190.0, seed=1)])))
    assert neither.code_path_warnings() == []  # a scenario that records none says nothing either way
    same = compare(refs(result_set(H100_ENV, [_decode(FUSED, 150.0)]), new))
    assert same.code_paths == [] and same.code_path_warnings() == []
    assert all(t.title != "Code paths that differ" for t in comparison_tables(same))


def test_the_run_cache_folder_holds_vllms_compile_cache_unless_the_user_named_one(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM declares its cache (Engine.cache_dirs); the harness passes the engines' down to compile_cache,
    which names none itself."""
    from llmbench.engines.vllm import compile_cache_state
    from llmbench.harness.isolation import engine_cache_dirs
    from llmbench.measure import compile_cache

    dirs = engine_cache_dirs()
    assert dirs["VLLM_CACHE_ROOT"] == "vllm"
    env = compile_cache.cache_env(str(tmp_path), {}, dirs)
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path) and env["VLLM_CACHE_ROOT"] == str(tmp_path / "vllm")
    assert "VLLM_CACHE_ROOT" not in compile_cache.cache_env(str(tmp_path), {"VLLM_CACHE_ROOT": "/mine"}, dirs)
    assert "VLLM_CACHE_ROOT" not in compile_cache.cache_env(str(tmp_path))
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(tmp_path / "vllm"))
    assert compile_cache_state() == "empty"
    (tmp_path / "vllm" / "torch_compile_cache" / "abc").mkdir(parents=True)
    assert compile_cache_state() == "holds entries"
