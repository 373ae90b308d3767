"""The quiet rule's timeline (harness/schedule.Schedule.timeline) replayed on this run's own split of each
case into set-up and timed part, for every start order: how short can the cold headline be over two
GPUs while no case times beside a set-up or another timed part? Cases the run left for --resume keep
their committed quotes, a third of each counted as timed (none of them records a split on H200).
Transformer Engine's case is counted as installed (it was). From the repository root (the makespans
also go to the JSON beside the run's other checks):

    PYTHONPATH=. python docs/evidence/h200-sxm-141gb/node-quiet/replay.py

A what-if, modelled, not measured: `replay.py ID=SECONDS ...` gives those cases that whole time (the timed
part kept), writes no JSON, and prints the makespans (replay-whatif.txt). `--out PATH` writes the JSON
there instead: the suite as it is now, its cases not in this run quoted from the committed sets (after
the headline's fp8 cases changed: ../kernel-tuning/replay-now.txt and
results/h200-sxm-141gb/checks/oneshot-node-fp8-untuned-replay.json).
"""
import json
import random
import sys
from dataclasses import replace
from pathlib import Path

import llmbench.harness.plan as plan
from llmbench.api.session import REFERENCE_RESULTS
from llmbench.harness import schedule
from llmbench.precision import DeviceInfo
from llmbench.results import load
from llmbench.suite import load_suite

plan.skip_reason = lambda case, device: None  # this machine lacks vLLM and TE; the GPU machine had both
suite = load_suite("headline")
device = DeviceInfo("cuda", "NVIDIA H200", (9, 0), 139.8)
committed = plan.reference_times(REFERENCE_RESULTS, "h200-sxm-141gb", other_gpus=True, expect="cold")
run = plan.ok_case_times(load(Path("results/h200-sxm-141gb/headline-20261126T181622Z.json")), "h200-sxm-141gb")
units = schedule.run_units(suite.cases, device, suite.share_engines)
quotes = plan.quote_units([list(u.cases) for u in units], {**committed, **run}, device)
for cid, q in list(quotes.items()):
    if cid not in run and not q.timed_s:
        quotes[cid] = replace(q, timed_s=q.seconds / 3)
args = sys.argv[1:]
out_path = args[args.index("--out") + 1] if "--out" in args else None
what_if = dict(a.split("=") for a in args if "=" in a)
for cid, seconds in what_if.items():
    quotes[cid] = replace(quotes[cid], seconds=float(seconds))
    print(f"what-if: {cid} takes {float(seconds):.0f} s in all")
for cid, m in run.items():
    print(f"{cid:24s} own {m.seconds:6.1f} s, timed part {m.timed_s:5.1f} s"
          + ("" if cid in quotes else "  (no longer in the suite)"))
for cid, q in quotes.items():
    if cid not in run and q.source != "skipped":
        print(f"{cid:24s} quote {q.seconds:6.1f} s ({q.source}, {q.gpu}), timed part {q.timed_s:5.1f} s")


def makespan(order: list, slots: int = 2) -> float:
    return schedule.Schedule((tuple(order),), quotes, slots).timeline(None).makespan_s


longest = sorted(units, key=lambda u: -sum(quotes[c.id].seconds for c in u.cases))
out = {"serial_s": round(sum(q.seconds for q in quotes.values()), 1), "suite_order_s": round(makespan(units), 1),
       "longest_first_s": round(makespan(longest), 1)}
print(f"case times sum to {out['serial_s']:.0f} s")
print(f"two GPUs: suite order {out['suite_order_s']:.0f} s, longest first {out['longest_first_s']:.0f} s")
best, order, rng = makespan(longest), list(longest), random.Random(1)
for _ in range(3000):  # swap two units; keep the order if it ends no later
    trial = list(order)
    i, j = rng.randrange(len(trial)), rng.randrange(len(trial))
    trial[i], trial[j] = trial[j], trial[i]
    if (t := makespan(trial)) <= best:
        best, order = t, trial
out["best_of_swaps_s"] = round(best, 1)
print(f"two GPUs, shortest of 3,000 swaps from longest first: {best:.0f} s")
for slots in (1, 3, 4):
    out[f"slots_{slots}_s"] = round(makespan(schedule.start_order(units, quotes, slots, None), slots), 1)
    print(f"{slots} slot(s), the runner's order: {out[f'slots_{slots}_s']:.0f} s")
if not what_if:
    Path(out_path or "results/h200-sxm-141gb/checks/oneshot-node-quiet-20261126-replay.json").write_text(
        json.dumps({"makespans": out}, indent=1) + "\n", encoding="utf-8")
