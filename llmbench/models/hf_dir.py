"""A Hugging Face model directory with a config (and a tokenizer) but no weights: what a server or
an engine needs to start a preset with random weights (vLLM `load_format="dummy"`, TensorRT-LLM's
checkpoint conversion), with exactly the architecture llmbench's transformers engine builds and no
download."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from llmbench.models.build import make_config
from llmbench.models.presets import get_preset
from llmbench.models.tokenizer import BOS_ID, EOS_ID, build_offline_tokenizer

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")


def write_config_dir(
    preset: str, out_dir: str | Path, tokenizer_dir: str | Path | None = None, *, tokenizer: bool = True
) -> Path:
    """Write `config.json` of `preset` (with `architectures`, which servers use to pick the model
    class), a greedy `generation_config.json` and a tokenizer into `out_dir`: the files of
    `tokenizer_dir`, or, without one, the offline tokenizer of the preset's vocabulary size; none with
    tokenizer=False (an engine fed token ids). Returns `out_dir`."""
    from transformers import GenerationConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    p = get_preset(preset)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not tokenizer:
        bos, eos = BOS_ID, EOS_ID
    elif tokenizer_dir is None:
        build_offline_tokenizer(out, p.vocab)
        bos, eos = BOS_ID, EOS_ID
    else:
        src = Path(tokenizer_dir)
        for name in TOKENIZER_FILES:
            if (src / name).is_file() and src.resolve() != out.resolve():
                shutil.copy2(src / name, out / name)
        bos, eos = _special_ids(out, BOS_ID, EOS_ID)
    cfg = make_config(model=preset).to_dict()
    cfg.update(architectures=[MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[p.model_type]], bos_token_id=bos,
               eos_token_id=eos, torch_dtype="bfloat16")
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    GenerationConfig(do_sample=False, bos_token_id=bos, eos_token_id=eos).save_pretrained(out)
    return out


def _special_ids(tok_dir: Path, bos: int, eos: int) -> tuple[int, int]:
    """The bos/eos ids of a tokenizer directory (its added tokens), else the defaults given."""
    try:
        data = json.loads((tok_dir / "tokenizer.json").read_text(encoding="utf-8"))
        cfg = json.loads((tok_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return bos, eos
    ids = {t["content"]: t["id"] for t in data.get("added_tokens", [])}

    def name(v: object) -> object:
        return v.get("content") if isinstance(v, dict) else v

    return ids.get(name(cfg.get("bos_token")), bos), ids.get(name(cfg.get("eos_token")), eos)  # type: ignore[arg-type]
