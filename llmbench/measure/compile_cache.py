"""torch.compile's on-disk caches shared by the case processes of one run, and what a case found in them.

Every case runs in a fresh process, so without a shared cache each compiled case of a model compiles
from scratch (most of a compiled Llama-3-8B case's minutes). Inductor keeps compiled FX graphs and
AOTAutograd results under TORCHINDUCTOR_CACHE_DIR; the runner points every case of a run (all passes of
`--repeat` included) at one folder, so the second case of a model and precision loads its kernels.
A cache hit replays the same generated code (and the autotuning choices made when it was written):
the code path is the same; what the case saves is compilation time. Each case records whether its
compilation was warm (`compile_cache_state`)."""

from __future__ import annotations

from typing import Any

ENV_DIR = "TORCHINDUCTOR_CACHE_DIR"
USER_SETTING = "LLMBENCH_COMPILE_CACHE"  # a folder to keep across runs, or "off": no shared cache


def cache_env(folder: str) -> dict[str, str]:
    """The environment that makes a case process read and write inductor's caches in `folder`."""
    return {ENV_DIR: folder, "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}


def counts() -> dict[str, int]:
    """This process's cache hits and misses so far (torch's own counters; zeros before any compile)."""
    from torch._dynamo.utils import counters

    ind, aot = counters["inductor"], counters["aot_autograd"]
    return {
        "fx_graph_hits": int(ind["fxgraph_cache_hit"]),
        "fx_graph_misses": int(ind["fxgraph_cache_miss"]),
        "aot_autograd_hits": int(aot["autograd_cache_hit"]),
        "aot_autograd_misses": int(aot["autograd_cache_miss"]),
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
