"""Where the host time of a compiled transformers fp8 decode goes, in the minutes after it compiled.

Issue 41: the time to first token of the headline's transformers fp8 decodes follows the CPU time of
their own process's main thread, which falls in two groups (3.2-4.2 and 5.5-6.9 ms per decode step at
the same GPU time), alone and beside others alike; what sets the group is not known. This script runs the
same code path as the harness (llmbench's HFSession: Llama-3-8B shape, random weights, q/k/v and gate/up
fused, torchao fp8 rowwise, a compiled decode step on a static cache) in one process, without the
harness's worker, compiles it, and then every --every seconds until --until reads:

- TTFT (CUDA events from the call's start to the first token, as the harness's TokenClock) and the
  host's wall time of a prefill-only call;
- the main thread's user and system CPU time, page faults and context switches (getrusage
  RUSAGE_THREAD) over a whole generate and over the prefill-only call;
- the CPU the thread ran on, how busy that CPU, its SMT siblings and the host were over the call
  (/proc/stat);
- the garbage collector's runs and time over the timed calls (gc.callbacks);
- the compile-worker processes alive under this one and the CPU they used since the last point;
- three host probes with no model in them: a pure-Python loop (a slower core shows here), a loop of
  small eager CPU tensor ops (torch's dispatch) and calls of one fp8 linear layer on a tiny input
  (torchao's tensor-subclass dispatch, what the eager prefill runs 128 times: 4 fused linears a layer).

The NVML sampling thread the harness runs during a timed window runs here too (--no-sampler leaves it out).
Options test candidate causes in fresh processes: --gc-freeze (gc.freeze() once compiled, as timeit
disables the collector), --shutdown-workers (torch's compile-worker pool shut down once compiled; it
quiesces by itself 60-90 s after its last job). One cProfile of a prefill-only call at the first and at
the last point gives the functions whose own time moved.

    python3 benchmarks/host_state_probe.py --label plain --out plain.json
    python3 benchmarks/host_state_probe.py --label freeze --gc-freeze --out freeze.json
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import resource
import statistics
import time
from pathlib import Path
from typing import Any

RUSAGE_FIELDS = ("ru_utime", "ru_stime", "ru_minflt", "ru_majflt", "ru_nvcsw", "ru_nivcsw")


def thread_cpu() -> int:
    """The CPU the calling thread last ran on (field 39 of /proc/thread-self/stat)."""
    text = Path("/proc/thread-self/stat").read_text()
    return int(text[text.rindex(")") + 2:].split()[36])


def rusage() -> tuple[float, ...]:
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return tuple(float(getattr(r, f)) for f in RUSAGE_FIELDS)


def rusage_delta(a: tuple[float, ...], b: tuple[float, ...]) -> dict[str, float]:
    d = [y - x for x, y in zip(a, b, strict=True)]
    return {"user_ms": round(d[0] * 1e3, 2), "sys_ms": round(d[1] * 1e3, 2), "minflt": d[2], "majflt": d[3],
            "vcsw": d[4], "ivcsw": d[5]}


def cpu_times() -> dict[int, tuple[int, int]]:
    """Per CPU: (busy, total) jiffies from /proc/stat."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu") and line[3].isdigit():
            name, *vals = line.split()
            v = [int(x) for x in vals]
            idle = v[3] + v[4]
            out[int(name[3:])] = (sum(v[:8]) - idle, sum(v[:8]))
    return out


def busy(a: dict[int, tuple[int, int]], b: dict[int, tuple[int, int]], cpus: list[int]) -> float | None:
    db = sum(b[c][0] - a[c][0] for c in cpus if c in a and c in b)
    dt = sum(b[c][1] - a[c][1] for c in cpus if c in a and c in b)
    return round(db / dt, 3) if dt else None


def siblings(cpu: int) -> list[int]:
    from llmbench.hardware.cpus import parse_cpu_list

    p = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
    return sorted(parse_cpu_list(p.read_text()) - {cpu}) if p.exists() else []


def descendants() -> dict[int, float]:
    """Processes under this one (the compile-worker pool and its workers): pid -> CPU seconds used."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            text = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        f = text[text.rindex(")") + 2:].split()
        parent[int(d)] = int(f[1])
        cpu[int(d)] = (int(f[11]) + int(f[12])) / tick
    mine, todo = set(), [os.getpid()]
    while todo:
        p = todo.pop()
        for child, pp in parent.items():
            if pp == p and child not in mine:
                mine.add(child)
                todo.append(child)
    return {p: cpu[p] for p in mine}


class HostEvent:
    """torch.cuda.Event's record/elapsed_time on the host clock (--device cpu)."""

    def record(self) -> None:
        self.t = time.perf_counter()

    def elapsed_time(self, end: HostEvent) -> float:
        return (end.t - self.t) * 1e3


class GcLog:
    """The collector's runs while on: generation and seconds of each."""

    def __init__(self) -> None:
        self.on = False
        self.runs: list[tuple[int, float]] = []
        self._t = 0.0
        gc.callbacks.append(self._cb)

    def _cb(self, phase: str, info: dict[str, Any]) -> None:
        if not self.on:
            return
        if phase == "start":
            self._t = time.perf_counter()
        else:
            self.runs.append((int(info["generation"]), time.perf_counter() - self._t))

    def take(self) -> dict[str, Any]:
        runs, self.runs = self.runs, []
        return {"runs": len(runs), "gen2": sum(g == 2 for g, _ in runs), "ms": round(sum(s for _, s in runs) * 1e3, 2)}


def py_loop_ms(n: int = 300_000) -> float:
    c = time.thread_time()
    s = 0
    for i in range(n):
        s += i * i % 7
    return (time.thread_time() - c) * 1e3


def torch_cpu_ms(torch: Any, n: int = 3000) -> float:
    x = torch.ones(16)
    c = time.thread_time()
    for _ in range(n):
        x = (x + 1) * 0.5
    return (time.thread_time() - c) * 1e3


def fp8_linear_us(torch: Any, layer: Any, device: str, n: int = 200) -> float:
    x = torch.randn(1, 4, layer.in_features, device=device, dtype=torch.bfloat16)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with torch.no_grad():
        layer(x)
        sync()
        c = time.thread_time()
        for _ in range(n):
            layer(x)
        spent = time.thread_time() - c
        sync()
    return spent / n * 1e6


def profile_prefill(session: Any, ids: Any, sync: Any, top: int = 25) -> list[list[Any]]:
    """The functions with the most own time in one prefill-only call, under cProfile."""
    prof = cProfile.Profile()
    prof.enable()
    session.generate(ids, tokens=1)
    sync()
    prof.disable()
    st = pstats.Stats(prof, stream=io.StringIO())
    rows = []
    for (file, line, name), (_cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        rows.append([f"{Path(file).name}:{line}:{name}", nc, round(tt * 1e3, 3), round(ct * 1e3, 3)])
    rows.sort(key=lambda r: -r[2])
    return rows[:top]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--precision", default="fp8")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--every", type=float, default=10.0, help="seconds between points, from the end of compiling")
    ap.add_argument("--until", type=float, default=120.0, help="the last point's time after compiling")
    ap.add_argument("--gens", type=int, default=3, help="timed generates per point")
    ap.add_argument("--gc-freeze", action="store_true")
    ap.add_argument("--shutdown-workers", action="store_true")
    ap.add_argument("--no-sampler", action="store_true")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run of the script (no CUDA events, no fp8)")
    a = ap.parse_args()

    import torch

    from llmbench.engines.hf import HFSession
    from llmbench.measure.monitors import open_sampler
    from llmbench.models.build import build_model, synthetic_ids

    t_start = time.perf_counter()
    cuda = a.device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    model = build_model(model=a.model, weights="random", device=a.device, seed=0)
    session = HFSession(model, "compiled")
    session.convert(a.precision)
    session.prepare(a.output_len)
    ids = synthetic_ids(session.vocab_size, a.batch, a.input_len, a.device, 0)
    build_s = time.perf_counter() - t_start
    t0 = time.perf_counter()
    session.generate(ids)
    sync()
    compile_s = time.perf_counter() - t0
    t_compiled = time.perf_counter()
    actions = {}
    if a.shutdown_workers:
        from torch._inductor.async_compile import shutdown_compile_workers

        c = time.perf_counter()
        shutdown_compile_workers()
        actions["shutdown_workers_s"] = round(time.perf_counter() - c, 3)
    if a.gc_freeze:
        gc.collect()
        gc.freeze()
        actions["gc_frozen_objects"] = gc.get_freeze_count()
    layer = session.model.model.layers[0].mlp.down_proj
    sampler = None if a.no_sampler else open_sampler(a.device)
    log = GcLog()
    points: list[dict[str, Any]] = []
    profiles: dict[str, Any] = {}
    kids_before = descendants()
    n_points = int(a.until // a.every) + 1
    for k in range(n_points):
        due = t_compiled + k * a.every
        while (left := due - time.perf_counter()) > 0:
            time.sleep(min(left, 1.0))
        at = time.perf_counter() - t_compiled
        probes = {"py_loop_ms": round(py_loop_ms(), 2), "torch_cpu_ms": round(torch_cpu_ms(torch), 2),
                  "fp8_linear_us": round(fp8_linear_us(torch, layer, a.device), 1)}
        gens = []
        log.on = True
        if sampler is not None:
            sampler.start()
        for _ in range(a.gens):
            begin, first = HostEvent(), HostEvent()
            if cuda:
                begin, first = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            seen: list[int] = []

            def on_token(first: Any = first, seen: list[int] = seen) -> None:
                if not seen:
                    first.record()
                seen.append(1)

            cpus0, r0, cpu_a, th0 = cpu_times(), rusage(), thread_cpu(), time.thread_time()
            w0 = time.perf_counter()
            begin.record()
            session.generate(ids, on_token=on_token)
            wall = time.perf_counter() - w0
            th1, r1, cpu_b, cpus1 = time.thread_time(), rusage(), thread_cpu(), cpu_times()
            sync()
            sib = siblings(cpu_b)
            gens.append({"ttft_ms": round(begin.elapsed_time(first), 2),
                         "cpu_ms_per_step": round((th1 - th0) / a.output_len * 1e3, 3),
                         "host_wall_ms": round(wall * 1e3, 1), "rusage": rusage_delta(r0, r1),
                         "cpu": [cpu_a, cpu_b], "busy_cpu": busy(cpus0, cpus1, [cpu_b]),
                         "busy_siblings": busy(cpus0, cpus1, sib) if sib else None,
                         "busy_host": busy(cpus0, cpus1, list(cpus1))})
        if sampler is not None:
            sampler.stop()
        gcs = log.take()
        log.on = False
        r0, c0, w0 = rusage(), time.thread_time(), time.perf_counter()
        session.generate(ids, tokens=1)
        prefill_cpu, prefill_wall, r1 = time.thread_time() - c0, time.perf_counter() - w0, rusage()
        sync()
        kids = descendants()
        kid_cpu = sum(kids.values()) - sum(v for p, v in kids_before.items() if p in kids)
        kids_before = kids
        points.append({
            "at_s": round(at, 1), "probes": probes, "gc": gcs, "gens": gens,
            "ttft_ms": statistics.median(g["ttft_ms"] for g in gens),
            "cpu_ms_per_step": statistics.median(g["cpu_ms_per_step"] for g in gens),
            "prefill_only": {"host_ms": round(prefill_wall * 1e3, 2), "cpu_ms": round(prefill_cpu * 1e3, 2),
                             "rusage": rusage_delta(r0, r1)},
            "workers_alive": len(kids), "workers_cpu_s_since_last": round(kid_cpu, 2),
            "threads": len(os.listdir("/proc/self/task")),
            "gc_counts": gc.get_count(),
        })
        p = points[-1]
        print(f"{a.label} t={at:6.1f}s ttft {p['ttft_ms']:7.2f} ms cpu/step {p['cpu_ms_per_step']:.3f} "
              f"prefill-only {p['prefill_only']['cpu_ms']:.1f} ms cpu py {probes['py_loop_ms']:.1f} "
              f"torch {probes['torch_cpu_ms']:.1f} fp8lin {probes['fp8_linear_us']:.0f}us gc {gcs} "
              f"workers {len(kids)} (+{kid_cpu:.1f}s) cpu {gens[-1]['cpu']}", flush=True)
        if k in (0, n_points - 1):
            profiles[f"at_{round(at)}s"] = profile_prefill(session, ids, sync)
    out = {"label": a.label, "args": vars(a), "build_s": round(build_s, 1), "compile_s": round(compile_s, 1),
           "actions": actions, "pid": os.getpid(), "affinity": sorted(os.sched_getaffinity(0)),
           "torch": torch.__version__, "gc_threshold": gc.get_threshold(), "points": points,
           "prefill_profiles": profiles}
    Path(a.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
