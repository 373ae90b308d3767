"""A TTFT under the prefill's compute floor is flagged: found on vLLM, whose prefix cache turned every
timed prefill after the first into a cache hit (75 ms for 32 x 2048 tokens of an 8B model, whose
FLOPs alone take 480 ms at the H200's fp8 peak)."""

from llmbench.scenarios.generate import prefill_floor_flag


def test_a_ttft_under_the_compute_floor_is_flagged_and_one_above_it_is_not() -> None:
    flag = prefill_floor_flag(0.068, 0.480)
    assert flag is not None and "68 ms" in flag and "480 ms" in flag and "cached prefix" in flag
    assert prefill_floor_flag(0.500, 0.480) is None
    assert prefill_floor_flag(0.440, 0.480) is None  # within the margin: a floor at the datasheet peak
