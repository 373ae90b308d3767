"""torch.compile's on-disk caches shared by the case processes of one run (and engines' own, declared as
`Engine.cache_dirs`), and what a case found in them (`compile_cache_state`). A hit replays the same
generated code: it saves compilation time, not a different code path. docs/design.md, "The harness and
the rules of measurement"."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

ENV_DIR = "TORCHINDUCTOR_CACHE_DIR"
USER_SETTING = "LLMBENCH_COMPILE_CACHE"  # a folder to keep across runs, or "off": no shared cache


CACHE_SWITCHES = ("TORCHINDUCTOR_FX_GRAPH_CACHE", "TORCHINDUCTOR_AUTOGRAD_CACHE")  # turned on by cache_env


def cache_env(folder: str, environ: dict[str, str] | None = None,
              engine_dirs: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment that makes a case process read and write inductor's caches in `folder`, and each
    engine's own (`engine_dirs`: variable -> subfolder) in `folder`/subfolder, unless `environ`, the
    user's, already sets that variable: a run starts cold and its cases share what its earlier cases
    compiled, as with torch's own."""
    env = {ENV_DIR: folder, **dict.fromkeys(CACHE_SWITCHES, "1")}
    own = {var: str(Path(folder) / sub) for var, sub in (engine_dirs or {}).items()}
    return env | {var: path for var, path in own.items() if var not in (environ or {})}


def inductor_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The TORCHINDUCTOR_* variables of this process, less the caches the runner points it at. A
    setting given this way becomes torch's default when its config module is imported, so it shows in
    no comparison with the defaults (TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=0 changes how every
    kernel is launched, and what a warm cache restores): the code path records them as they are."""
    import os

    env = os.environ if environ is None else environ
    return {k: v for k, v in sorted(env.items())
            if k.startswith("TORCHINDUCTOR_") and k != ENV_DIR and k not in CACHE_SWITCHES}


def counts() -> dict[str, int]:
    """This process's cache hits and misses so far (torch's own counters; zeros before any compile)."""
    from torch._dynamo.utils import counters

    ind, aot = counters["inductor"], counters["aot_autograd"]
    return {
        "fx_graph_hits": int(ind["fxgraph_cache_hit"]),
        "fx_graph_misses": int(ind["fxgraph_cache_miss"]),
        "aot_autograd_hits": int(aot["autograd_cache_hit"]),
        "aot_autograd_misses": int(aot["autograd_cache_miss"]),
        "coordinate_descent_benchmarks": int(ind["coordesc_tuning_bench"]),  # each a Triton compile and a run
    }


def state(before: dict[str, int], after: dict[str, int]) -> dict[str, Any]:
    """What a compilation between two `counts()` found: `warm` (every graph loaded from the cache),
    `cold` (every graph compiled), `partly warm`, or `no graph compiled`."""
    delta = {k: after[k] - before.get(k, 0) for k in after}
    hits, misses = delta["fx_graph_hits"], delta["fx_graph_misses"]
    if hits and not misses:
        label = "warm"
    elif misses and not hits:
        label = "cold"
    elif hits:
        label = "partly warm"
    else:
        label = "no graph compiled"
    return {"compile_cache_state": label, **{k: v for k, v in delta.items() if v}}


# Inductor's kernel tuning on a kernel's first launch (torch/_inductor/runtime/triton_heuristics.py):
# benchmarking its candidate configs, then coordinate descent from the best, each step a Triton compile
# and a benchmark. They run inside the first compiled call, after compilation proper.
TUNING_EVENTS = ("CachingAutotuner.benchmark_all_configs", "CachingAutotuner.coordinate_descent_tuning",
                 "CachingAutotuner.combo_sequential_autotune")


def phase_totals() -> dict[str, float]:
    """torch's cumulative compile-phase times in this process, in seconds: its `dynamo_timed` phases
    (entire_frame_compile, backend_compile, inductor_compile, ...) and `kernel_tuning` (TUNING_EVENTS);
    empty where this torch keeps none."""
    try:
        from torch._dynamo.utils import calculate_time_spent, compilation_time_metrics
    except ImportError:
        return {}
    out = {k: float(v) for k, v in calculate_time_spent().items()}
    out["kernel_tuning"] = float(sum(sum(compilation_time_metrics.get(e, [])) for e in TUNING_EVENTS))
    return out


def phases(before: dict[str, float], after: dict[str, float], first_call_s: float) -> dict[str, float]:
    """Where a first compiled call's `first_call_s` went, between two `phase_totals()`: Dynamo's
    tracing, AOTAutograd, Inductor (code generation, or loading it from the cache), the tuning of
    kernels on their first launch (coordinate descent: torchao's quantize_ turns it on for the whole
    process), and the rest of the call (the eager prefill, CUDA-graph capture, the other steps). A warm
    FX-graph cache saves the Inductor part; Dynamo traces again in every process. Empty where this
    torch keeps no phase times."""
    if not after:
        return {}

    def spent(key: str) -> float:
        return max(after.get(key, 0.0) - before.get(key, 0.0), 0.0)

    frame, backend, inductor = spent("entire_frame_compile"), spent("backend_compile"), spent("inductor_compile")
    tuning = spent("kernel_tuning")
    return {"dynamo": round(max(frame - backend, 0.0), 2), "aot_autograd": round(max(backend - inductor, 0.0), 2),
            "inductor": round(inductor, 2), "kernel_tuning": round(tuning, 2),
            "rest_of_call": round(max(first_call_s - frame - tuning, 0.0), 2)}


def expected_state() -> str:
    """The state a run's compile cache starts in, for its quotes: "warm" where the user keeps one
    (LLMBENCH_COMPILE_CACHE, a folder with inductor's FX-graph entries in it), else "cold" (a run's own
    folder starts empty)."""
    import os

    setting = os.environ.get(USER_SETTING, "")
    if not setting or setting.lower() == "off":
        return "cold"
    graphs = Path(setting) / "fxgraph"
    return "warm" if graphs.is_dir() and any(graphs.iterdir()) else "cold"
