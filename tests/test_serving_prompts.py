"""Prompts of exact token length (checked by encoding them again), ShareGPT prompts, the offline
tokenizer and the config-only model directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llmbench.errors import UserError
from llmbench.models.hf_dir import write_config_dir
from llmbench.models.tokenizer import build_offline_tokenizer, synthetic_words
from llmbench.serving.prompts import PromptMaker, load_tokenizer, sharegpt_sessions, synthetic_sessions


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return load_tokenizer(str(build_offline_tokenizer(tmp_path_factory.mktemp("tok"), 1024)))


@pytest.fixture(scope="module")
def bpe() -> Any:
    """A byte-level BPE trained in memory: merges across words differ from the word-level one."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    rng = np.random.default_rng(0)
    words = synthetic_words(400)
    corpus = [" ".join(rng.choice(words, 12)) + "." for _ in range(2000)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=600, special_tokens=["<bos>"]))
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>")


@pytest.mark.parametrize("which", ["offline", "bpe"])
@pytest.mark.parametrize("n", [2, 7, 128, 1000])
def test_prompts_have_exactly_the_length_asked(request: pytest.FixtureRequest, which: str, n: int) -> None:
    tok = request.getfixturevalue(which)
    maker = PromptMaker(tok, seed=0)
    rng = np.random.default_rng(1)
    for _ in range(3):
        text = maker.text(n, rng)
        assert len(tok(text)["input_ids"]) == n  # BOS included: what the server counts
        assert len(tok(" " + maker.text(n, rng, special=False), add_special_tokens=False)["input_ids"]) >= n


def test_prompts_differ_and_repeat_with_the_seed(offline: Any) -> None:
    a = synthetic_sessions(offline, 4, 32, 8, seed=0)
    b = synthetic_sessions(offline, 4, 32, 8, seed=0)
    c = synthetic_sessions(offline, 4, 32, 8, seed=1)
    assert a == b and a != c
    firsts = {s.turns[0].text.split()[0:3].__repr__() for s in a}
    assert len(firsts) == 4  # no shared prefix by accident
    multi = synthetic_sessions(offline, 2, 16, 4, turns=3)
    assert [len(s.turns) for s in multi] == [3, 3]
    assert len(offline(multi[0].turns[1].text, add_special_tokens=False)["input_ids"]) == 16


def test_an_input_too_short_for_the_special_tokens_is_a_user_error(offline: Any) -> None:
    with pytest.raises(UserError, match="leaves no room"):
        PromptMaker(offline).text(1, np.random.default_rng(0))


def test_a_missing_tokenizer_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot load the tokenizer"):
        load_tokenizer(str(tmp_path / "nothing-here"))


def test_sharegpt_prompts(tmp_path: Path, offline: Any) -> None:
    data = [{"conversations": [{"from": "human", "value": " ".join(["ba"] * (i + 4))},
                               {"from": "gpt", "value": " ".join(["be"] * (i + 1))}]} for i in range(6)]
    data.append({"conversations": [{"from": "human", "value": "ba"}, {"from": "gpt", "value": "be"}]})  # too short
    p = tmp_path / "sharegpt.json"
    p.write_text(json.dumps(data))
    got = sharegpt_sessions(p, offline, 10, seed=0)
    assert len(got) == 6  # the 2-token prompt is left out
    for s in got:
        t = s.turns[0]
        assert t.input_len == len(offline(t.text)["input_ids"])
        assert t.output_len == t.text.count("ba") - 3  # the answer's length: 3 words fewer
    assert {s.turns[0].output_len for s in sharegpt_sessions(p, offline, 3, output_len=5)} == {5}
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(UserError, match="no ShareGPT conversations"):
        sharegpt_sessions(tmp_path / "bad.json", offline, 3)


def test_the_offline_tokenizer_decodes_every_id_to_a_word(offline: Any) -> None:
    assert len(offline) == 1024
    assert offline.bos_token_id == 1 and offline.eos_token_id == 2
    words = [offline.decode([i]) for i in range(3, 1024)]
    assert all(w.isalpha() for w in words) and len(set(words)) == len(words)
    assert offline.decode([5, 6, 7]).count(" ") == 2
    assert "assistant" in offline.apply_chat_template([{"role": "user", "content": "ba"}], tokenize=False,
                                                      add_generation_prompt=True)


def test_a_config_dir_a_server_can_start_from(tmp_path: Path) -> None:
    from transformers import AutoConfig, AutoTokenizer

    d = write_config_dir("tiny-llama", tmp_path / "m")
    cfg = json.loads((d / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLM"]
    assert cfg["bos_token_id"] == 1 and cfg["eos_token_id"] == 2
    assert AutoConfig.from_pretrained(str(d)).hidden_size == 256
    assert len(AutoTokenizer.from_pretrained(str(d))) == cfg["vocab_size"] == 4096
    shared = write_config_dir("tiny-llama", tmp_path / "m2", d)  # a given tokenizer is copied
    assert (shared / "tokenizer.json").read_bytes() == (d / "tokenizer.json").read_bytes()
