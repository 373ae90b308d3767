"""analysis/runs.py, the one rule: which runs of a case on a GPU stand for it."""

from __future__ import annotations

from typing import Any

from llmbench.analysis.runs import Run, case_runs, choose
from llmbench.results import ResultSet
from tests.test_compare_support import H100_ENV, H200_ENV, gemm_case, result_set

FUSED = {"engine": "hf", "mode": "compiled", "fused_projection_groups": 64}
UNFUSED = {"engine": "hf", "mode": "compiled", "fused_projection_groups": 0}


def _run(tflops: float, when: str, path: dict[str, Any] | None, env: dict[str, Any] = H100_ENV,
         status: str = "ok", placement: dict[str, Any] | None = None, **info: Any) -> tuple[str, ResultSet]:
    c = gemm_case("bf16", tflops, samples=False)
    params = {**c.params, **({"placement": placement} if placement else {})}
    c = c.model_copy(update={"code_path": path, "started_at": when, "status": status, "params": params,
                             "reason": None if status == "ok" else "boom", "info": {**c.info, **info}})
    rs = result_set(env, [c], suite="headline", created_at=when)
    return f"set-{when}.json", rs


def _chosen(*runs: tuple[str, ResultSet]) -> Any:
    got = case_runs(list(runs))
    (gpu,) = got.values()
    (only,) = gpu.cases.values()
    return only


def test_the_newest_recorded_path_stands_and_another_path_is_left_out_with_why() -> None:
    cr = _chosen(_run(600.0, "2026-11-20T00:00:00Z", UNFUSED), _run(700.0, "2026-11-22T00:00:00Z", FUSED),
                 _run(720.0, "2026-11-23T00:00:00Z", FUSED))
    assert [r.file for r in cr.used] == ["set-2026-11-23T00:00:00Z.json", "set-2026-11-22T00:00:00Z.json"]
    assert cr.value("tflops") == 710.0  # the median of the two runs of the newest path, not of all three
    (left,) = cr.left_out
    assert left.run.file == "set-2026-11-20T00:00:00Z.json"
    assert left.why == "another code path (fused_projection_groups)"
    assert cr.path_recorded and cr.note == ""


def test_runs_without_a_path_pool_only_within_one_repeat_group_and_say_so() -> None:
    with_path = _chosen(_run(600.0, "2026-11-24T00:00:00Z", None), _run(700.0, "2026-11-22T00:00:00Z", FUSED))
    assert with_path.value("tflops") == 700.0  # an older run with a path beats a newer one without
    assert [lo.why for lo in with_path.left_out] == ["recorded no code path"]
    none = _chosen(_run(600.0, "2026-11-24T00:00:00Z", None), _run(800.0, "2026-11-22T00:00:00Z", None))
    assert none.value("tflops") == 600.0 and not none.path_recorded  # two runs, no group: the newest alone
    assert "no code path recorded" in none.note and "one repeat group" in none.note
    assert [lo.why for lo in none.left_out] == ["recorded no code path: pooled only within one repeat group"]


def test_runs_on_two_gpus_or_beside_other_cases_are_never_pooled_with_one_alone() -> None:
    """Identities never pool; a run beside other cases stands only where no run had the host to itself
    (a newer side-by-side node run does not displace the one-GPU figures compared with other GPUs)."""
    beside = _run(500.0, "2026-11-23T00:00:00Z", FUSED, ran_beside_cases=True)
    cr = _chosen(_run(700.0, "2026-11-22T00:00:00Z", FUSED), beside,
                 _run(900.0, "2026-11-21T00:00:00Z", FUSED, placement={"gpus": 2}, gpus="0,1"))
    assert [r.file for r in cr.used] == ["set-2026-11-22T00:00:00Z.json"]  # the newest alone run's identity
    assert cr.identity.alone is True and cr.identity.gpus == 1
    whys = sorted(lo.why for lo in cr.left_out)
    assert whys == ["another measurement (1 GPU, beside other cases, not 1 GPU)",
                    "another measurement (2 GPUs, not 1 GPU)"]
    only_beside = _chosen(beside, _run(450.0, "2026-11-20T00:00:00Z", FUSED, ran_beside_cases=True))
    assert only_beside.identity.alone is False and only_beside.value("tflops") == 475.0


def test_a_one_gpu_case_that_saw_two_gpus_is_a_one_gpu_measurement() -> None:
    """A serial run once showed every case all of --gpus: the GPUs a case used are its placement's."""
    cr = _chosen(_run(700.0, "2026-11-22T00:00:00Z", FUSED), _run(710.0, "2026-11-23T00:00:00Z", FUSED, gpus="0,1"))
    assert len(cr.used) == 2 and cr.identity.gpus == 1 and not cr.left_out


def test_failed_runs_are_left_out_with_their_status_and_a_case_never_ok_has_no_figure() -> None:
    cr = _chosen(_run(700.0, "2026-11-22T00:00:00Z", FUSED), _run(1.0, "2026-11-23T00:00:00Z", None, status="failed"))
    assert cr.value("tflops") == 700.0 and [lo.why for lo in cr.left_out] == ["failed: boom"]
    name, rs = _run(1.0, "2026-11-23T00:00:00Z", None, status="failed")
    assert choose("h100", rs.cases[0].id, [Run(name, rs, rs.cases[0])]) is None


def test_each_gpu_is_its_own_side_and_published_sets_are_not_runs() -> None:
    from llmbench.results import Source
    h100, h200 = _run(700.0, "2026-11-22T00:00:00Z", FUSED), _run(760.0, "2026-11-22T00:00:00Z", FUSED, env=H200_ENV)
    pub = ("pub.json", h100[1].model_copy(update={"source": Source(kind="published", citation="x")}))
    got = case_runs([h100, h200, pub])
    assert sorted(got) == ["h100-sxm-80gb", "h200-sxm-141gb"]
    assert got["h100-sxm-80gb"].files == ["set-2026-11-22T00:00:00Z.json"]

