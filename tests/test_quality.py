"""Accuracy on real text (llmbench.models.quality, generate's quality params) on tiny random models: the
figures of a model against itself, against a changed copy, the gate, and what the params accept."""

from __future__ import annotations

import pytest
import torch

from llmbench.engines.hf import HFSession
from llmbench.models import corpus, quality, smollm2, tasks
from llmbench.models.build import build_model
from llmbench.models.tokenizer import build_offline_tokenizer
from llmbench.scenarios.generate import GenerateParams


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> quality.QualityInputs:
    from transformers import AutoTokenizer

    folder = build_offline_tokenizer(tmp_path_factory.mktemp("tok"), 4096)
    return quality.quality_inputs(AutoTokenizer.from_pretrained(str(folder)), offset=0, tokens=1024, items=6,
                                  prompts=2)


def _session(seed: int = 0) -> HFSession:
    return HFSession(build_model(model="tiny-llama", device="cpu", dtype=torch.float32, seed=seed), "eager")


def _logits(s: HFSession):
    return lambda seqs: s.logits(torch.tensor(seqs))


@pytest.mark.slow
def test_a_model_against_itself_loses_nothing(inputs: quality.QualityInputs) -> None:
    s = _session()
    ref = quality.evaluate(s, inputs, _logits(s))
    figs = quality.compare(quality.evaluate(s, inputs, _logits(s)), ref)
    assert figs["perplexity_increase"].value == pytest.approx(0.0, abs=1e-9)
    assert figs["kl_divergence"].value == pytest.approx(0.0, abs=1e-6)
    assert figs["top1_agreement"].value == 1.0 and figs["greedy_agreement"].value == 1.0
    assert figs["task_accuracy_drop"].value == 0.0
    ppl = figs["perplexity"]
    assert ppl.value > 1 and ppl.ci95[0] <= ppl.value <= ppl.ci95[1] and len(ppl.samples) == 2
    assert quality.gate_failures(figs, quality.DEFAULT_GATE) == []


@pytest.mark.slow
def test_other_weights_move_every_figure_and_the_gate_names_metric_and_threshold(
        inputs: quality.QualityInputs) -> None:
    a, b = _session(0), _session(1)
    ref = quality.evaluate(a, inputs, _logits(a))
    figs = quality.compare(quality.evaluate(b, inputs, _logits(b)), ref)
    assert figs["kl_divergence"].value > 0 and figs["top1_agreement"].value < 1
    assert figs["perplexity_increase"].value != 0
    failed = quality.gate_failures(figs, {"kl_divergence": 1e-9})
    assert len(failed) == 1 and "kl_divergence" in failed[0] and "1e-09" in failed[0]


def test_token_logprobs_of_a_padded_batch_are_those_of_each_sequence_alone() -> None:
    s = _session()
    seqs = [[5, 6, 7, 8, 9, 10], [11, 12, 13]]
    batched = s.token_logprobs(seqs)
    alone = [s.token_logprobs([q])[0] for q in seqs]
    assert [len(x) for x in batched] == [5, 2]
    for x, y in zip(batched, alone, strict=True):
        assert x == pytest.approx(y, abs=1e-4)


def test_the_corpus_window_is_fixed_and_recorded(inputs: quality.QualityInputs) -> None:
    rec = inputs.record()
    w = rec["corpus_window"]
    assert w["token_offset"] == 0 and w["tokens"] == 1024 and len(w["corpus_sha256"]) == 64
    assert rec["task_set"]["name"] == tasks.TASK_NAME and rec["task_set"]["version"] == tasks.TASK_VERSION
    assert rec["task_set"]["source"] == tasks.SOURCE and rec["prompt_set"]["version"] == quality.PROMPT_SET_VERSION
    with pytest.raises(ValueError, match="does not fit"):
        corpus.corpus_window(type("T", (), {"__call__": lambda self, t, **k: {"input_ids": [1, 2, 3]}})(), 0, 8)


def test_the_shipped_task_set_is_whole() -> None:
    header, items = tasks.load_task_set()
    assert header["source"] == tasks.SOURCE and len(items) == 200
    assert all(len(i.choices) == 4 and 0 <= i.answer < 4 for i in items)
    assert all(len(set(i.choices)) == 4 for i in items)


def test_quality_params() -> None:
    p = GenerateParams(model="smollm2-135m", weights="pretrained", quality=True)
    assert p.accuracy_gate is None  # the default gate: quality.DEFAULT_GATE
    assert "quality" not in GenerateParams(model="tiny-llama").model_dump()  # earlier cases keep their ids
    with pytest.raises(ValueError, match="real weights"):
        GenerateParams(model="tiny-llama", quality=True)
    with pytest.raises(ValueError, match="perplexity_increase"):
        GenerateParams(model="smollm2-135m", weights="pretrained", quality=True, accuracy_gate={"speed": 1.0})
    with pytest.raises(ValueError, match="smollm2-135m"):
        GenerateParams(model="tiny-llama", weights="pretrained")


def test_the_real_model_missing_says_how_to_get_it(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(smollm2.DIR_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=smollm2.GGUF_NAME):
        smollm2.gguf_file()
    assert smollm2.GGUF_NAME in (smollm2.missing_reason() or "")
