"""Does a neighbour's compilation slow a decode on the other GPU of the same host? A plain A/B on one
machine, nothing of llmbench imported (plain_vllm_tp.py's engine and timed calls): vLLM decodes
Llama-3-8B (random weights, 128 in, 128 out) on GPU 0, bound to the first half of the host's cores, in
rounds that alternate quiet (nothing else runs) and loaded (a second process on the other half of the
cores and GPU 1 compiles model after model with torch.compile and runs each: what a compiling case
beside it does).

    python3 benchmarks/neighbour_load.py --out neighbour.json                  # fp8, batches 1 and 8
    python3 benchmarks/neighbour_load.py --precision bf16 --batches 8 --rounds 2

Each round and state: one warm-up call per batch, then --iters timed calls; the figure is output tokens
per second (batch x output_len / the call's wall time, median of the calls): llmbench's
`output_tokens_per_s`. The order is quiet, loaded, loaded, quiet, ... so that a drift over the run
falls on both states alike. The answer is loaded / quiet per batch, with each state's rounds beside it.
NVLink multicast stays off (the machine's variables are kept)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from plain_vllm_tp import engine, timed_calls


def halves() -> tuple[list[int], list[int]]:
    cores = sorted(os.sched_getaffinity(0))
    return cores[: len(cores) // 2], cores[len(cores) // 2:]


def load_loop() -> None:
    """The neighbour: compile a fresh MLP stack (new shapes each time, so nothing comes from a cache) on
    this process's GPU and run it, until killed. Prints one line per compiled model."""
    import torch

    torch.set_float32_matmul_precision("high")
    i = 0
    while True:
        torch._dynamo.reset()
        width = 1024 + 64 * i
        layers = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                                           torch.nn.LayerNorm(4 * width),
                                                           torch.nn.Linear(4 * width, width))
                                       for _ in range(4)]).cuda().bfloat16()
        step = torch.compile(layers)
        x = torch.randn(64, width, device="cuda", dtype=torch.bfloat16)
        t0 = time.perf_counter()
        for _ in range(50):
            step(x)
        torch.cuda.synchronize()
        print(f"compiled {i} width {width} in {time.perf_counter() - t0:.1f} s", flush=True)
        i += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--precision", default="fp8", choices=["fp8", "bf16"])
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--rounds", type=int, default=3, help="quiet/loaded pairs")
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--settle-s", type=float, default=20.0, help="seconds of load before a loaded round times")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.load:
        load_loop()
        return 0
    mine, theirs = halves()
    os.sched_setaffinity(0, mine)  # before vLLM starts: its engine core inherits it
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    batches = [int(b) for b in a.batches.split(",")]
    with tempfile.TemporaryDirectory() as d:
        llm = engine(1, d, "fp8" if a.precision == "fp8" else None)
        order = [s for r in range(a.rounds) for s in (("quiet", "loaded") if r % 2 == 0 else ("loaded", "quiet"))]
        rounds: list[dict[str, Any]] = []
        log = Path(d) / "load.log"
        for state in order:
            load = None
            if state == "loaded":
                load = subprocess.Popen(["taskset", "-c", ",".join(map(str, theirs)), sys.executable, __file__,
                                         "--load"], env={**os.environ, "CUDA_VISIBLE_DEVICES": "1",
                                                         "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"},
                                        stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
                time.sleep(a.settle_s)
            start = time.time()
            row = {"state": state, "window_unix": [start, 0.0],
                   "rates": {b: timed_calls(llm, b, 128, 128, a.iters)["calls"] for b in batches}}
            row["window_unix"][1] = time.time()
            if load is not None:
                os.killpg(load.pid, signal.SIGKILL)  # the compile workers too
                load.wait()
                row["neighbour_log"] = log.read_text().splitlines()
                if load.returncode not in (-9, 0) or not any(ln.startswith("compiled") for ln in row["neighbour_log"]):
                    raise SystemExit("the neighbour compiled nothing: " + "\n".join(row["neighbour_log"][-5:]))
            rounds.append(row)
            print(state, {b: round(statistics.median(r), 1) for b, r in row["rates"].items()}, flush=True)
    out: dict[str, Any] = {"precision": a.precision, "cores": {"decode": mine, "neighbour": theirs},
                           "rounds": rounds, "answer": {}}
    for b in batches:
        q = [statistics.median(r["rates"][b]) for r in rounds if r["state"] == "quiet"]
        ld = [statistics.median(r["rates"][b]) for r in rounds if r["state"] == "loaded"]
        out["answer"][b] = {"quiet": q, "loaded": ld, "loaded_over_quiet": statistics.median(ld) / statistics.median(q)}
        print(f"batch {b}: quiet {statistics.median(q):.1f}, loaded {statistics.median(ld):.1f} output tok/s "
              f"(loaded/quiet {out['answer'][b]['loaded_over_quiet']:.4f}; quiet rounds {min(q):.1f}-{max(q):.1f}, "
              f"loaded {min(ld):.1f}-{max(ld):.1f})", flush=True)
    if a.out:
        a.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
