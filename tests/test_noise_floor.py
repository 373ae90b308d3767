"""Which runs make the noise floor: runs of a case that recorded the same code path pool from any machine
(the spread between machines and days is the one that matters); a case without a recorded path pools
only within one `run --repeat` group; runs whose paths differ measured different code and never pool."""

from __future__ import annotations

from typing import Any

import numpy as np
from test_compare_support import H200_ENV, case, metric, result_set

from llmbench.analysis.noisefloor import floor_of
from llmbench.results import ResultSet

PATH = {"engine": "hf", "mode": "compiled", "fused_projection_groups": 64, "top_kernels": ["a"]}


def run(tok_s: float, path: dict[str, Any] | None, group: str | None = None) -> ResultSet:
    c = case("generate", {"precision": "bf16", "batch_size": 1},
             {"decode_tokens_per_s": metric("decode_tokens_per_s", tok_s, samples=False)})
    c.code_path = dict(path or {})
    rs = result_set(H200_ENV, [c], suite="headline")
    if group:
        rs.repeat = {"group": group, "index": 1, "of": 2}  # type: ignore[attr-defined]  # an extra header field
    return rs


def test_runs_of_one_code_path_pool_across_machines() -> None:
    # two machines, one run each, no repeat group; the profile's kernel list differs (a diagnostic key)
    floor = floor_of([run(190.0, PATH), run(200.0, {**PATH, "top_kernels": ["b"]})])
    got = floor.get("h200-sxm-141gb", "generate", "decode_tokens_per_s")
    # no machine recorded: each run a machine of its own, so the spread is between machines
    assert got is not None and got.machine_df == 1 and got.machine_cases == 1 and got.run_var is None
    assert got.machine_var is not None and np.isclose(got.machine_var, (np.log(200.0) - np.log(190.0)) ** 2 / 2)


def test_runs_of_different_code_paths_never_pool() -> None:
    unfused = {**PATH, "fused_projection_groups": 0}
    assert not floor_of([run(190.0, PATH), run(200.0, unfused)])


def test_runs_without_a_code_path_pool_only_within_their_repeat_group() -> None:
    assert not floor_of([run(190.0, None), run(200.0, None)])  # two days: nothing says the code was the same
    assert not floor_of([run(190.0, None, "g1"), run(200.0, None, "g2")])
    pooled = floor_of([run(190.0, None, "g1"), run(200.0, None, "g1")])
    assert pooled.get("h200-sxm-141gb", "generate", "decode_tokens_per_s") is not None
