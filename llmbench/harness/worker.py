"""The case process. The runner starts one per case (`python -m llmbench.harness.worker case SPEC OUT`),
or one per share group of cases (`group SPECS OUT_DIR`: cases that run on one loaded engine session,
one after another), with CUDA_VISIBLE_DEVICES already set, so torch is first imported here, on the
right GPU.

It writes its outcome to OUT (JSON) atomically, after the journal entry its spec names (harness/journal.py:
the outcome outlives a runner killed before it recorded it); anything it cannot write (a segfault, a kill)
the runner turns into a status from the exit code and the stderr tail."""

from __future__ import annotations

import faulthandler
import json
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from llmbench.precision import DeviceInfo
from llmbench.results import write_atomic

if TYPE_CHECKING:
    from llmbench.scenarios.base import SharedSessions

TRACEBACK_TAIL = 4000


def device_info(want: str) -> DeviceInfo:
    """On the CPU torch is left to the scenario that needs it: its import is seconds of every case process."""
    if want != "cpu":
        import torch

        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            return DeviceInfo("cuda", p.name, (p.major, p.minor), round(p.total_memory / 2**30, 1))
    from llmbench.hardware.fingerprint import cpu_info

    return DeviceInfo("cpu", f"CPU {cpu_info()['model']}")


def _is_oom(e: BaseException) -> bool:
    """An allocation failure: torch's (CUDA) OutOfMemoryError, MemoryError, or an error that says so
    (torch's CPU allocator raises a RuntimeError: "DefaultCPUAllocator: can't allocate memory")."""
    import torch

    from llmbench.harness.isolation import says_out_of_memory

    return isinstance(e, (torch.OutOfMemoryError, MemoryError)) or says_out_of_memory(str(e))


def run_case(spec: dict[str, Any], shared: SharedSessions | None = None) -> dict[str, Any]:
    """One case from its spec (CaseSpec.worker_spec): the scenario bound to the engine the case names
    (built here from its options) and its placement; the engine's own reason to skip (a package not
    installed) comes before the scenario's."""
    from llmbench.engines.base import build_engine, engine_options
    from llmbench.harness.launchers.replicas import run_replica_case
    from llmbench.harness.launchers.torchrun import run_rank_case
    from llmbench.measure.replica_sync import ReplicaSync
    from llmbench.measure.timing import StopRule
    from llmbench.placement import Placement
    from llmbench.registry import PluginError
    from llmbench.scenarios.base import SCENARIOS, CaseContext, RankScenario, Skip

    try:  # the plugins are imported again here: one that fails in this process is the case's reason
        cls = SCENARIOS.get(spec["scenario"])
        slot, table = cls.engine_slot, spec.get("engine")
        table = table or ({"name": slot.default} if slot and slot.default else None)  # the scenario's own
        engine = build_engine(engine_options(table, slot.interface), slot.interface) if slot and table else None
    except PluginError as e:
        return {"status": "failed", "reason": str(e)[:500]}
    scenario = cls(engine, Placement.model_validate(spec.get("placement") or {}))
    params = scenario.Params.model_validate(spec["params"])
    rule = StopRule.model_validate(spec.get("settings", {}))
    device = device_info(spec.get("device", "auto"))
    out: dict[str, Any] = {"device": device.name}
    reason = (engine.missing_reason() if engine else None) or scenario.skip_reason(params, device)
    if reason:
        return {**out, "status": "skipped", "reason": reason}
    ctx = CaseContext(device, rule, engine=engine,  # the engine the case names
                      shared=shared, case_id=str(spec.get("id", "")),  # shared: a share group's sessions
                      replica=ReplicaSync.from_spec(spec.get("replica")))  # one copy of a case of several
    from llmbench.hardware.power import PowerLimitError, case_power_limit
    from llmbench.measure import quiet

    quiet.setup(ctx.info, ctx.progress)  # beside other cases: its set-up starts while none of them times
    settings = scenario.worker_settings(params)  # what the scenario asks set around the case
    launch_failed = None  # a rank launch or a replica that failed: the case's status and reason
    try:
        with case_power_limit(settings.power_limit_w):  # restored on any end
            if isinstance(scenario, RankScenario):  # its ranks through the torchrun launcher
                launch_failed = run_rank_case(scenario, params, ctx, rule.timeout_s)
            elif scenario.placement.replicas > 1:  # its copies side by side, each a case process
                launch_failed = run_replica_case(scenario, spec, ctx, rule.timeout_s)
            else:
                scenario.run(params, ctx)
    except (Skip, PowerLimitError) as e:
        return {**out, "status": "skipped", "reason": str(e)}
    except BaseException as e:  # the case's top level: any error is its result, with its traceback
        status = "oom" if _is_oom(e) else "failed"
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return {**out, "status": status, "reason": f"{type(e).__name__}: {first}"[:500],
                "traceback": traceback.format_exc()[-TRACEBACK_TAIL:], "info": ctx.info,
                "code_path": ctx.code_path, "metrics": {k: v.model_dump() for k, v in ctx.metrics.items()}}
    if launch_failed is not None:
        return {**out, "status": launch_failed.status, "reason": launch_failed.reason,
                "traceback": launch_failed.traceback, "info": ctx.info, "code_path": ctx.code_path,
                "metrics": {k: v.model_dump() for k, v in ctx.metrics.items()}}
    try:  # what others read back from the info is typed: a wrong type fails here, not in a report
        scenario.Info.model_validate(ctx.info)  # strict: `of` reads a wrong type as absent
    except ValidationError as e:
        return {**out, "status": "failed", "reason": f"the case's info does not fit {type(scenario).__name__}.Info "
                f"({scenario.Info.__name__}): {_first_error(e)}", "info": ctx.info}
    return {**out, "status": "ok", "timer": ctx.timer.name, "info": ctx.info, "code_path": ctx.code_path,
            "metrics": {k: v.model_dump() for k, v in ctx.metrics.items()}}


GROUP_DONE = ("ok", "skipped")  # a group goes on after these; any other end stops it (the rest run alone)


def run_group(specs: list[dict[str, Any]], out_dir: Path) -> None:
    """The cases of one share group, in order, in this process, sharing what their scenario keeps
    (SharedSessions): each case's outcome is written to OUT_DIR/<i>.json as soon as it ends, so the
    runner records it then and a crash later costs only the cases not yet written. The first case that
    does not end ok or skipped stops the group: its sessions may be what failed, so the runner runs
    that case and the rest alone."""
    from llmbench.harness import journal
    from llmbench.scenarios.base import SharedSessions

    shared = SharedSessions()
    try:
        for i, spec in enumerate(specs):
            entry, began = spec.pop(journal.KEY, None), time.time()
            outcome = {**run_case(spec, shared), "ended_unix": time.time()}  # the runner's times of the cases
            journal.write(entry, outcome, began)
            write_atomic(out_dir / f"{i}.json", json.dumps(outcome, default=str))
            if outcome["status"] not in GROUP_DONE:
                break
    finally:
        shared.close_all()


def main(argv: list[str]) -> int:
    faulthandler.enable()  # a segfault still leaves a Python stack in stderr
    from llmbench.hardware.cpus import bind_from_env
    from llmbench.harness.isolation import watch_runner

    bind_from_env()  # beside other cases: this slot's cores, before torch (and its threads) start
    from llmbench.measure import quiet

    quiet.setup()  # and importing torch is set-up: it waits while a case beside it times

    watch_runner()  # a runner killed with kill -9 takes this process and what it started with it
    if len(argv) == 2 and argv[0] == "fingerprint":
        from llmbench.engines.base import ENGINES
        from llmbench.hardware.fingerprint import collect

        write_atomic(Path(argv[1]), json.dumps(collect([d for _, e in ENGINES for d in e.distributions])))
        return 0
    if len(argv) == 2 and argv[0] == "doctor":
        from llmbench.harness.doctor import write_checks

        write_checks(Path(argv[1]))
        return 0
    if len(argv) == 3 and argv[0] == "case":
        from llmbench.harness import journal

        spec = json.loads(Path(argv[1]).read_text())
        entry, began = spec.pop(journal.KEY, None), time.time()  # not handed on (a replica's spec)
        outcome = run_case(spec)
        journal.write(entry, outcome, began)
        write_atomic(Path(argv[2]), json.dumps(outcome, default=str))
        return 0
    if len(argv) == 3 and argv[0] == "group":
        run_group(json.loads(Path(argv[1]).read_text()), Path(argv[2]))
        return 0
    print("usage: python -m llmbench.harness.worker case SPEC OUT | group SPECS OUT_DIR | fingerprint OUT | doctor OUT",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def _first_error(e: ValidationError) -> str:
    first = e.errors()[0]
    return f"info.{'.'.join(str(p) for p in first['loc'])}: {first['msg']} (got {first.get('input')!r:.80})"
