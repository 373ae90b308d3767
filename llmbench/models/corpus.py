"""A real English corpus every Python ships: the help topics of `pydoc_data.topics` (about half a
million characters of the Python reference), as one text and as fixed token windows.

The text is the topics joined in sorted key order, so one Python gives one text; another Python's
release may word its documentation differently, which is why every window records its text's sha256
and the Python version it came from. Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import platform
from dataclasses import dataclass
from typing import Any

SOURCE = "pydoc_data.topics (the Python reference's help topics, joined in sorted key order)"


def corpus_text() -> str:
    """The whole corpus as one string."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k].strip() for k in sorted(topics))


@dataclass(frozen=True)
class CorpusWindow:
    """`length` tokens of the tokenized corpus from token `offset`: what a perplexity is computed on."""

    ids: list[int]
    offset: int  # first token, in the tokenization of the whole corpus
    length: int
    corpus_tokens: int  # tokens in the whole corpus
    corpus_sha256: str  # of corpus_text(), UTF-8
    python: str  # the Python whose pydoc_data it is

    def sequences(self, seq_len: int) -> list[list[int]]:
        """The window cut into whole, non-overlapping sequences of `seq_len` tokens (a tail is dropped)."""
        if seq_len < 2:
            raise ValueError(f"seq_len must be >= 2 (a token and its successor), got {seq_len}")
        return [self.ids[i:i + seq_len] for i in range(0, len(self.ids) - seq_len + 1, seq_len)]

    def record(self) -> dict[str, Any]:
        """What a result set records of the window (the ids themselves are left out)."""
        return {"source": SOURCE, "token_offset": self.offset, "tokens": self.length,
                "corpus_tokens": self.corpus_tokens, "corpus_sha256": self.corpus_sha256, "python": self.python}


def corpus_window(tokenizer: Any, offset: int = 0, length: int = 4096) -> CorpusWindow:
    """Tokens [offset, offset + length) of the corpus as `tokenizer` (a transformers tokenizer) cuts it,
    without special tokens; an error if the corpus is shorter."""
    if offset < 0 or length < 2:
        raise ValueError(f"offset must be >= 0 and length >= 2, got offset={offset}, length={length}")
    text = corpus_text()
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    if offset + length > len(ids):
        raise ValueError(f"the corpus has {len(ids)} tokens with this tokenizer: offset {offset} + length "
                         f"{length} does not fit")
    return CorpusWindow(ids=ids[offset:offset + length], offset=offset, length=length, corpus_tokens=len(ids),
                        corpus_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                        python=platform.python_version())
