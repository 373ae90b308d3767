"""A small real tokenizer built offline, so a random-weight model served by vLLM streams real text.

A word-level vocabulary of exactly the model's size: every id, whatever a random model emits,
decodes to a word (" bakosu"), so each streamed token is a non-empty piece of text and no
download is needed. The words are made from syllables in a fixed order, so the same size always
gives the same tokenizer. `tokenizers`/`transformers` are imported inside the functions.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

SPECIALS = ("<unk>", "<s>", "</s>")  # ids 0, 1, 2: LlamaConfig's default bos/eos ids are 1 and 2
BOS_ID, EOS_ID = 1, 2
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}assistant {% endif %}"
)


def synthetic_words(n: int) -> list[str]:
    """n distinct pronounceable words (consonant-vowel syllables, shortest first)."""
    syllables = [c + v for c in _CONSONANTS for v in _VOWELS]
    out: list[str] = []
    for length in itertools.count(1):
        for combo in itertools.product(syllables, repeat=length):
            if len(out) == n:
                return out
            out.append("".join(combo))
    return out  # pragma: no cover (the loop returns)


def build_offline_tokenizer(out_dir: str | Path, vocab_size: int) -> Path:
    """Write a Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json, special
    tokens, a plain chat template) with exactly `vocab_size` ids; returns the directory."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    if vocab_size < len(SPECIALS) + 16:
        raise ValueError(f"vocab_size {vocab_size} is too small for a word-level tokenizer (>= {len(SPECIALS) + 16})")
    words = synthetic_words(vocab_size - len(SPECIALS))
    vocab = {tok: i for i, tok in enumerate([*SPECIALS, *("▁" + w for w in words)])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", BOS_ID)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="</s>",
        model_max_length=1 << 20,
    )
    fast.chat_template = CHAT_TEMPLATE
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out))
    _portable_config(out)
    return out


def _portable_config(out: Path) -> None:
    """transformers 5 names its own backend class and keeps the chat template in a separate file;
    the names transformers 4 knows (which a vLLM install may pin) are written as well."""
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg.pop("backend", None)
    cfg.update(tokenizer_class="PreTrainedTokenizerFast", chat_template=CHAT_TEMPLATE, add_bos_token=True,
               add_eos_token=False)
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    specials = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "</s>"}
    (out / "special_tokens_map.json").write_text(json.dumps(specials, indent=2) + "\n", encoding="utf-8")
