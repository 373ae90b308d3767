"""Workloads of prompts: synthetic text of an exact token length for a given tokenizer, or real
prompts from a ShareGPT-style JSON file.

Synthetic prompts are words the tokenizer encodes as one token each, drawn at random per request
(so no two prompts share a prefix by accident), and each prompt's length is checked by encoding it
again, special tokens included: the server sees exactly `input_len` tokens.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from llmbench.errors import UserError
from llmbench.serving.load import Session, Turn

POOL_WORDS = 2000  # distinct single-token words to draw prompts from
MIN_POOL = 50


@lru_cache(maxsize=4)
def load_tokenizer(name: str) -> Any:
    """A transformers tokenizer from a local directory or a hub id (loaded once per process)."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise UserError("exact-length prompts need transformers: pip install 'llmbench[hf]'") from None
    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as e:  # OSError for a missing dir or hub id, ValueError for a broken one
        raise UserError(f"cannot load the tokenizer {name!r}: {(str(e).strip().splitlines() or [''])[0]}") from None


def _count(tok: Any, text: str, special: bool = True) -> int:
    return len(tok(text, add_special_tokens=special)["input_ids"])


def word_pool(tok: Any, seed: int = 0, size: int = POOL_WORDS) -> list[str]:
    """Plain words (ASCII letters) that encode as exactly one token both at the start of a text and
    after a space, found among the tokenizer's vocabulary in a seeded order."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(len(tok))
    pool: list[str] = []
    for start in range(0, len(ids), 4096):
        batch = [tok.decode([int(i)]).strip() for i in ids[start:start + 4096]]
        words = sorted({w for w in batch if w.isascii() and w.isalpha()} - set(pool))
        if not words:
            continue
        pairs = tok([f"{w} {w}" for w in words], add_special_tokens=False)["input_ids"]
        pool += [w for w, p in zip(words, pairs, strict=True) if len(p) == 2]
        if len(pool) >= size:
            return pool[:size]
    if len(pool) < MIN_POOL:
        raise UserError(f"the tokenizer has only {len(pool)} plain single-token words; synthetic prompts need "
                        f"{MIN_POOL} (give prompts from a dataset instead)")
    return pool


class PromptMaker:
    """Texts of exact token length for one tokenizer."""

    def __init__(self, tok: Any, seed: int = 0) -> None:
        self.tok = tok
        self.pool = word_pool(tok, seed)
        self.specials = _count(tok, "")  # BOS and the like, added to every encoded text

    def text(self, n_tokens: int, rng: np.random.Generator, special: bool = True) -> str:
        """Random words encoding to exactly `n_tokens` (counting the special tokens the tokenizer
        adds when `special`), verified by encoding the text again."""
        target = n_tokens - (self.specials if special else 0)
        if target < 1:
            raise UserError(f"an input of {n_tokens} tokens leaves no room for text after the tokenizer's "
                            f"{self.specials} special token(s)")
        words = [self.pool[i] for i in rng.integers(0, len(self.pool), size=target)]
        for _ in range(64):  # words that merge across a space are rare; add or drop words until exact
            got = _count(self.tok, " ".join(words), special)
            if got == n_tokens:
                return " ".join(words)
            if got < n_tokens:
                words.append(self.pool[int(rng.integers(0, len(self.pool)))])
            else:
                words.pop()
        raise RuntimeError(f"could not make a text of exactly {n_tokens} tokens with this tokenizer")


def synthetic_sessions(
    tok: Any, n: int, input_len: int, output_len: int, *, turns: int = 1, seed: int = 0
) -> list[Session]:
    """n sessions of `turns` turns; every turn adds `input_len` new tokens and asks for `output_len`.
    The first turn's text counts the special tokens; later turns are appended to a history."""
    maker = PromptMaker(tok, seed)
    rng = np.random.default_rng(seed)
    return [
        Session(tuple(Turn(maker.text(input_len, rng, special=k == 0), output_len, input_len) for k in range(turns)))
        for _ in range(n)
    ]


def sized_sessions(tok: Any, lengths: list[tuple[int, int]], seed: int = 0) -> list[Session]:
    """One single-turn session per (input_len, output_len) pair, as a trace gives them."""
    maker = PromptMaker(tok, seed)
    rng = np.random.default_rng(seed)
    return [Session((Turn(maker.text(max(i, maker.specials + 1), rng), o, i),)) for i, o in lengths]


def sharegpt_sessions(
    path: str | Path, tok: Any, n: int, *, output_len: int | None = None, seed: int = 0, max_input: int = 1 << 30
) -> list[Session]:
    """n prompts sampled (seeded) from a ShareGPT-style JSON list of {"conversations": [{"from":
    "human", "value": ...}, {"from": "gpt", "value": ...}, ...]}: the first human turn is the prompt;
    the output length is `output_len`, else the length of the answer that followed it."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read the dataset {str(p)!r}: {e}") from None
    pairs: list[tuple[str, str]] = []
    for item in data if isinstance(data, list) else []:
        conv = (item.get("conversations") or item.get("conversation") or []) if isinstance(item, dict) else []
        if len(conv) >= 2 and isinstance(conv[0], dict) and isinstance(conv[1], dict):
            pairs.append((str(conv[0].get("value", "")), str(conv[1].get("value", ""))))
    if not pairs:
        raise UserError(f"{str(p)!r} has no ShareGPT conversations (a JSON list of {{'conversations': [...]}})")
    rng = np.random.default_rng(seed)
    out: list[Session] = []
    for i in rng.permutation(len(pairs)):
        prompt, answer = pairs[int(i)]
        n_in = _count(tok, prompt)
        n_out = output_len or _count(tok, answer, special=False)
        if n_in < 4 or n_out < 1 or n_in > max_input:
            continue
        out.append(Session((Turn(prompt, n_out, n_in),)))
        if len(out) == n:
            return out
    if not out:
        raise UserError(f"no conversation of {str(p)!r} fits (prompts of 4..{max_input} tokens)")
    return out
