"""The typed part of a case's info (llmbench/caseinfo.py): checked when a case is recorded, read back
through the models, and every committed result set, of any version, loads through them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from llmbench.caseinfo import CaseInfo, PublishedInfo, TimelineInfo
from llmbench.harness.worker import run_case
from llmbench.scenarios.base import SCENARIOS, CaseContext, Scenario, ScenarioParams
from tests.conftest import tracked

ROOT = Path(__file__).resolve().parent.parent
SETS = sorted(p for top in ("results", "llmbench/references/data") for p in tracked(top, "*.json")
              if isinstance(d := json.loads(p.read_text()), dict) and isinstance(d.get("cases"), list)
              and d.get("schema_version") is not None)


@SCENARIOS.register("info_probe")
class InfoProbe(Scenario):
    """test-only: writes the `throttled` entry its info model types as a bool."""

    Params = type("InfoProbeParams", (ScenarioParams,), {"__annotations__": {"throttled": Any}, "throttled": None})
    Info = TimelineInfo

    def run(self, params: Any, ctx: CaseContext) -> None:
        ctx.info["throttled"] = params.throttled
        ctx.info["a note for people"] = {"free": "form"}


def probe(throttled: Any) -> dict[str, Any]:
    return run_case({"scenario": "info_probe", "params": {"throttled": throttled}, "device": "cpu",
                     "settings": {"warmup_iters": 0, "min_iters": 1}})


def test_info_that_fits_its_model_is_recorded_with_the_free_form_rest() -> None:
    out = probe(True)
    assert out["status"] == "ok", out
    info = TimelineInfo.of(out["info"])
    assert info.throttled is True and info.model_extra == {"a note for people": {"free": "form"}}


def test_info_that_does_not_fit_fails_the_case_and_says_which_entry() -> None:
    out = probe("maybe")
    assert out["status"] == "failed"
    assert "InfoProbe.Info (TimelineInfo)" in out["reason"] and "info.throttled" in out["reason"]


def test_every_committed_result_set_reads_through_the_info_models() -> None:
    assert len(SETS) > 50  # the results folder is there
    versions = set()
    for path in SETS:
        data = json.loads(path.read_text())
        published = (data.get("source") or {}).get("kind") == "published"
        for case in data["cases"]:
            model = PublishedInfo if published else SCENARIOS.get(case["scenario"]).Info
            info = model.of(case.get("info"))
            assert isinstance(info, CaseInfo)
            versions.add(info.info_version)
    assert 0 in versions  # sets written before info was typed load too


READERS = ("llmbench/analysis", "llmbench/report", "llmbench/commands", "llmbench/api")


@pytest.mark.parametrize("where", READERS)
def test_readers_read_info_through_the_models_not_by_string(where: str) -> None:
    target = ROOT / where
    files = [target] if target.is_file() else sorted(target.rglob("*.py"))
    reads = [f"{p.relative_to(ROOT)}:{n}" for p in files for n, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"\binfo(\.get\(|\[)[\"']", line)]
    assert reads == [], "read it through a model of llmbench/caseinfo.py"
