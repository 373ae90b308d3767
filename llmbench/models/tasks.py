"""The task set llmbench ships for accuracy beside speed: cloze items from the Python reference.

Each item is a sentence of `pydoc_data.topics` (the Python documentation, PSF License) with its last
word taken away and four choices: that word and three last words of other sentences. A model answers
by the choice whose tokens it finds most likely after the context (lm-evaluation-harness's
`multiple_choice` with metric `acc`). The items are written once by `build_cloze_items` into
TASK_FILE with their text, so every Python reads the same set. Nothing here imports torch.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TASK_NAME = "pydoc-cloze"
TASK_VERSION = 1
TASK_FILE = Path(__file__).resolve().parents[1] / "references" / "data" / "tasks" / f"{TASK_NAME}-v{TASK_VERSION}.json"
SOURCE = ("sentences of pydoc_data.topics (the Python reference's help topics, PSF License), last word as the "
          "answer, last words of three other sentences as the distractors")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LAST_WORD = re.compile(r"^(?P<context>.*\S)\s+(?P<word>[A-Za-z]{4,})\.$", re.S)


@dataclass(frozen=True)
class ClozeItem:
    context: str  # the sentence without its last word (and full stop)
    choices: tuple[str, ...]  # each with its leading space, as the continuation is scored
    answer: int  # index into choices


def build_cloze_items(text: str, n: int = 200, seed: int = 0) -> list[ClozeItem]:
    """`n` items from the prose sentences of `text` (one line each, 8 to 40 words, ending in a word of
    four letters or more and a full stop), the distractors drawn from other sentences' last words."""
    found: list[tuple[str, str]] = []
    for para in re.split(r"\n\s*\n", text):
        if para.startswith((" ", "\t")) or "::=" in para or ">>>" in para:  # code and grammar, not prose
            continue
        for sentence in _SENTENCE.split(" ".join(para.split())):
            m = _LAST_WORD.match(sentence)
            if m and 8 <= len(sentence.split()) <= 40 and '"' not in m["word"]:
                found.append((m["context"], m["word"]))
    rng = random.Random(seed)
    rng.shuffle(found)
    words = sorted({w for _, w in found})
    items = []
    for context, word in found[:n]:
        distractors = rng.sample([w for w in words if w.lower() != word.lower()], 3)
        choices = [word, *distractors]
        rng.shuffle(choices)
        items.append(ClozeItem(context, tuple(" " + c for c in choices), choices.index(word)))
    return items


def write_task_file(items: list[ClozeItem], path: Path = TASK_FILE, python: str = "") -> Path:
    """The shipped task file: its version, source and items."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"name": TASK_NAME, "version": TASK_VERSION, "source": SOURCE, "python": python,
            "items": [{"context": i.context, "choices": list(i.choices), "answer": i.answer} for i in items]}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def load_task_set(path: Path = TASK_FILE) -> tuple[dict[str, Any], list[ClozeItem]]:
    """The task file's header (name, version, source, python) and its items."""
    data = json.loads(path.read_text(encoding="utf-8"))
    items = [ClozeItem(d["context"], tuple(d["choices"]), int(d["answer"])) for d in data.pop("items")]
    return data, items


if __name__ == "__main__":  # python -m llmbench.models.tasks: write the shipped file from this Python's corpus
    import platform

    from llmbench.models.corpus import corpus_text

    print(write_task_file(build_cloze_items(corpus_text()), python=platform.python_version()))
