"""The shipped lm-evaluation-harness task of the task set (no lm-eval needed): its YAML names the one
items file, the name and version llmbench records, and the run-time copy names that file absolutely."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from llmbench.models import lm_eval_task, tasks


def test_the_shipped_yaml_is_the_task_set_llmbench_records() -> None:
    config = yaml.safe_load(lm_eval_task.TASK_YAML.read_text(encoding="utf-8"))
    header, items = tasks.load_task_set()
    assert config["task"] == tasks.TASK_NAME == header["name"]
    assert config["metadata"]["version"] == tasks.TASK_VERSION == header["version"]
    assert config["dataset_kwargs"]["data_files"] == {config["test_split"]: tasks.TASK_FILE.name}
    assert config["dataset_kwargs"]["field"] == "items" and config["output_type"] == "multiple_choice"
    assert config["target_delimiter"] == "" and all(c.startswith(" ") for i in items for c in i.choices)
    assert [m["metric"] for m in config["metric_list"]] == ["acc"]


def test_the_run_time_copy_names_the_items_file_absolutely(tmp_path: Path) -> None:
    path = lm_eval_task.task_config(tmp_path)
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    data = Path(config["dataset_kwargs"]["data_files"]["test"])
    assert data.is_absolute() and data == tasks.TASK_FILE
    assert len(json.loads(data.read_text(encoding="utf-8"))["items"]) == 200
    assert Path(config["dataset_kwargs"]["cache_dir"]).parent == tmp_path  # not the user's datasets cache


def test_without_lm_eval_the_version_is_none_and_the_note_names_the_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from llmbench.engines.hf import HFSession
    from llmbench.scenarios.generate_quality import scorer_note

    monkeypatch.setitem(sys.modules, "lm_eval", None)
    assert lm_eval_task.version() is None
    hf = HFSession.__new__(HFSession)
    note = scorer_note(SimpleNamespace(lm_eval=None), hf)  # type: ignore[arg-type]
    assert note.startswith("llmbench") and lm_eval_task.INSTALL in note
    assert "not this engine's" in scorer_note(SimpleNamespace(lm_eval=None), object())  # type: ignore[arg-type]
    assert scorer_note(SimpleNamespace(lm_eval="0.4.13"), hf).startswith(  # type: ignore[arg-type]
        "lm-evaluation-harness 0.4.13: local task pydoc-cloze")
