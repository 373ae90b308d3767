"""A TTFT under the prefill's compute floor is flagged: found on vLLM, whose prefix cache turned every
timed prefill after the first into a cache hit (75 ms for 32 x 2048 tokens of an 8B model, whose
FLOPs alone take 480 ms at the H200's fp8 peak)."""

from llmbench.scenarios.generate import prefill_floor_flag


def test_a_ttft_under_the_compute_floor_is_flagged_and_one_above_it_is_not() -> None:
    flag = prefill_floor_flag(0.068, 0.480)
    assert flag is not None and "68 ms" in flag and "480 ms" in flag and "cached prefix" in flag
    assert prefill_floor_flag(0.500, 0.480) is None
    assert prefill_floor_flag(0.440, 0.480) is None  # within the margin: a floor at the datasheet peak


def test_torch_peak_memory_is_not_recorded_for_work_in_another_process(monkeypatch) -> None:
    """vLLM's model lives in its engine-core process: this process's torch peak (0 GiB) is no figure of
    the engine, so generate leaves it out for engines that say they run out of process."""
    import torch

    from llmbench.engines.base import InferenceEngine
    from llmbench.engines.vllm import VLLMEngine
    from llmbench.measure.timing import Measurement, StopRule
    from llmbench.precision import DeviceInfo
    from llmbench.scenarios.base import CaseContext

    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: 2**30)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda: 2**31)
    m = Measurement(samples_s=[0.1, 0.1, 0.1], warmup_s=0.0, elapsed_s=0.3, timer="perf_counter")
    for in_process, expected in ((True, {"peak_memory_gib", "peak_reserved_gib"}), (False, set())):
        ctx = CaseContext(DeviceInfo(kind="cpu", name="x"), StopRule(), emit_progress=False)
        ctx.device = DeviceInfo(kind="cuda", name="fake", cc=(9, 0), memory_gib=80.0)
        ctx.record_monitors(m, torch_memory=in_process)
        assert set(ctx.metrics) & {"peak_memory_gib", "peak_reserved_gib"} == expected
    assert InferenceEngine.in_process is True and VLLMEngine.in_process is False
