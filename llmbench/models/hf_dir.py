"""A Hugging Face model directory (config.json + generation_config.json, no weights) for a preset, so
engines that load a model from a directory (vLLM with load_format="dummy", TensorRT-LLM's checkpoint
conversion) get exactly the architecture that llmbench's transformers engine builds. transformers is
imported inside."""

from __future__ import annotations

from pathlib import Path

from llmbench.models.presets import get_preset


def write_config_dir(preset: str, out_dir: str | Path, tokenizer_dir: str | Path | None = None) -> Path:
    """Write `preset`'s config.json and generation_config.json (bf16, greedy, no EOS so generation
    runs as long as asked) into `out_dir`; copy a tokenizer's files from `tokenizer_dir` when given
    (engines that detokenize need one; llmbench passes token ids and skips the tokenizer)."""
    import shutil

    from transformers import AutoConfig, GenerationConfig

    p = get_preset(preset)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = AutoConfig.for_model(p.model_type, **p.config_kwargs())
    cfg.architectures = [_ARCHITECTURES.get(p.model_type, "LlamaForCausalLM")]
    cfg.dtype = "bfloat16"
    cfg.save_pretrained(out)
    GenerationConfig(do_sample=False).save_pretrained(out)
    if tokenizer_dir is not None:
        for f in Path(tokenizer_dir).iterdir():
            if f.is_file() and f.name.startswith(("tokenizer", "special_tokens", "vocab", "merges")):
                shutil.copy2(f, out / f.name)
    return out


# The model class that vLLM and transformers look up from config.architectures, per model_type.
_ARCHITECTURES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "gpt2": "GPT2LMHeadModel",
}
