"""The shipped task set through lm-evaluation-harness, where it is installed: its local task (TASK_YAML,
beside the items) scored by the harness's HFLM on a transformers model object already loaded, so that a
case's task accuracy is lm-eval's own `acc` on the very model whose speed it measured.

The items stay in one file (llmbench.models.tasks.TASK_FILE); the shipped YAML names it relative to its
folder, and `score` writes a copy naming it by absolute path into a temporary folder, with the `datasets`
cache there too and the hub switched off (local files only). lm_eval is imported inside the functions.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from llmbench.models.tasks import TASK_FILE, TASK_NAME, ClozeItem

TASK_YAML = TASK_FILE.with_suffix(".yaml")
INSTALL = "pip install 'llmbench[lm-eval]'"
SOFTMAX_DTYPE = "float32"  # as llmbench's own scorer: log-softmax of float32 logits, whatever the weights


def version() -> str | None:
    """lm-eval's version where `lm_eval` imports, else None."""
    try:
        import lm_eval  # noqa: F401
    except ImportError:
        return None
    return metadata.version("lm_eval")


def scorer_name(lm_eval_version: str) -> str:
    """What a result set records as the task set's scorer when lm-eval scored it."""
    return (f"lm-evaluation-harness {lm_eval_version}: local task {TASK_NAME} ({TASK_YAML.name}), metric acc, "
            f"HFLM on the case's own model object, softmax in {SOFTMAX_DTYPE}")


@dataclass(frozen=True)
class Scores:
    """lm-eval's figures per item, in the task set's order."""

    loglikelihoods: list[list[float]]  # per item, each choice's summed log-likelihood
    correct: list[int]  # lm-eval's acc per item: 1 where the answer scored highest


def task_config(folder: Path) -> Path:
    """The shipped YAML with its data file named by absolute path and the `datasets` cache in `folder`,
    written there (lm-eval reads a task from a folder of YAML files)."""
    import yaml

    config = yaml.safe_load(TASK_YAML.read_text(encoding="utf-8"))
    kwargs = config["dataset_kwargs"]
    kwargs["data_files"] = {split: str(TASK_YAML.parent / name) for split, name in kwargs["data_files"].items()}
    kwargs["cache_dir"] = str(folder / "datasets-cache")
    path = folder / TASK_YAML.name
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def score(model: Any, tokenizer: Any, items: Sequence[ClozeItem], batch_size: int = 32) -> Scores:
    """lm-eval's `acc` on the first len(items) items of the shipped set, by HFLM on `model` (a loaded
    transformers model, left as it is) with `tokenizer` (HFLM sets its pad token: pass one of its own)."""
    os.environ["HF_DATASETS_OFFLINE"] = "1"  # the items are a local file: nothing is fetched from the hub
    import datasets

    datasets.config.HF_DATASETS_OFFLINE = True
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    with tempfile.TemporaryDirectory(prefix="llmbench-lm-eval-") as tmp, _quiet(), _ties_kept(model):
        manager = TaskManager(include_path=str(task_config(Path(tmp)).parent), include_defaults=False)
        lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size, add_bos_token=False,
                  softmax_dtype=SOFTMAX_DTYPE)
        # no seeds: lm-eval would reseed the case process's generators; a zero-shot task draws nothing
        out = lm_eval.simple_evaluate(model=lm, tasks=[TASK_NAME], task_manager=manager, num_fewshot=0,
                                      limit=len(items), bootstrap_iters=0, log_samples=True, random_seed=None,
                                      numpy_random_seed=None, torch_random_seed=None, fewshot_random_seed=None)
    samples = sorted(out["samples"][TASK_NAME], key=lambda s: s["doc_id"])
    if [s["doc_id"] for s in samples] != list(range(len(items))):
        raise RuntimeError(f"lm-eval scored items {[s['doc_id'] for s in samples][:10]}..., not the first "
                           f"{len(items)}")
    for s, item in zip(samples, items, strict=True):
        if s["doc"]["context"] != item.context or tuple(s["doc"]["choices"]) != item.choices:
            raise RuntimeError(f"lm-eval's item {s['doc_id']} is not the task set's: {s['doc']['context'][:60]!r}")
    return Scores(loglikelihoods=[[float(ll) for ll, _ in s["filtered_resps"]] for s in samples],
                  correct=[int(s["acc"]) for s in samples])


@contextlib.contextmanager
def _ties_kept(model: Any) -> Iterator[None]:
    """HFLM calls tie_weights() on the model it is handed; the measured model stays as it was measured."""
    model.tie_weights = lambda *a, **k: None
    try:
        yield
    finally:
        del model.tie_weights


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """lm-eval's warnings about a model object and about `limit` (which takes the set's first items) are
    expected here: only its errors reach the case's log."""
    log = logging.getLogger("lm_eval")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)
