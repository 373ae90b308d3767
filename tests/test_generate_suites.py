"""The inference suites parse, validate and expand to the intended matrix."""

from __future__ import annotations

import pytest

from llmbench.errors import SuiteError
from llmbench.suite import load_suite, parse_suite


def test_llama3_8b_suite_covers_the_matrix() -> None:
    s = load_suite("inference-llama3-8b")
    combos = {(c.params.precision, c.params.batch_size, c.params.input_len, c.params_dict["mode"]) for c in s.cases}
    assert len(combos) == len(s.cases) == 5 * 3 * 2 * 2 + 2
    assert {c for c in combos if c[0] == "fp8-wo"} == {("fp8-wo", 1, 128, "compiled"), ("fp8-wo", 1, 2048, "compiled")}
    assert {c.params.model for c in s.cases} == {"llama-3-8b"}
    assert {c.params.output_len for c in s.cases} == {128}
    compiled = [c for c in s.cases if c.params_dict["mode"] == "compiled"]
    assert compiled and all(c.settings.timeout_s == 900 for c in compiled)


def test_tiny_suite_runs_on_the_cpu_model() -> None:
    s = load_suite("inference-tiny")
    assert {c.params.model for c in s.cases} == {"tiny-llama"}
    assert {c.params_dict["mode"] for c in s.cases} == {"eager", "compiled"}


def test_a_bad_model_in_a_suite_names_the_presets() -> None:
    data = {"name": "x", "case": [{"scenario": "generate", "model": "llama-5"}]}
    with pytest.raises(SuiteError) as e:
        parse_suite(data, "x.toml")
    assert "llama-5" in str(e.value) and "tiny-llama" in str(e.value) and "x.toml" in str(e.value)
