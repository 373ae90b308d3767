"""The torchrun launcher (`torchrun`): a case's ranks, one process per GPU of its placement, started by
`torch.distributed.run` from inside the case process (`run_rank_case` for a `RankScenario`), and the
file protocol between them (spec in, `rank<RANK>.json` or `.error.json` out). Rendezvous, failure as an
outcome and why no rank outlives its launch: docs/design.md, "The launcher layer" (torchrun)."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from llmbench.hardware.topology import multicast_off, multicast_settings
from llmbench.harness.isolation import (
    ChildOutcome,
    OomCounts,
    oom_counts,
    rank_tmp_prefix,
    says_out_of_memory,
    sigkill_outcome,
    signal_name,
    stop_marked,
)
from llmbench.harness.launchers.base import ProgressFn
from llmbench.results import write_atomic
from llmbench.scenarios.base import CaseContext, RankRun, RankScenario
from llmbench.serving.server import free_port

OUTPUT_TAIL = 3000
STOP_GRACE_S = 10.0  # torchrun's time to stop its ranks after SIGTERM
RANKS_TOKEN_ENV = "LLMBENCH_RANKS_TOKEN"  # the marker every rank of one launch carries
RENDEZVOUS = "standalone"  # one node: torchrun's own local rendezvous
NODES_RENDEZVOUS = "c10d"  # ranks over several nodes: torchrun's c10d rendezvous, node rank 0 hosting its store
# torchrun's failure summary, one block per failed rank ("rank : 1 (local_rank: 1)", "exitcode : 3 (pid: ...)")
_FAILED_RANK = re.compile(r"rank\s*:\s*(\d+)[^\n]*\n\s*exitcode\s*:\s*(-?\d+)(?:\s*\(pid:\s*(\d+)\))?")
STOPPED_BY_TORCHRUN = -signal.SIGTERM  # how torchrun ends the other ranks once one failed
TORCHRUN_LOGS = "torchrun-logs"  # torchrun's --log-dir, in the launch's own folder (removed with it)


def rank_file(out_dir: Path, rank: int, suffix: str = "") -> Path:
    return out_dir / f"rank{rank}{suffix}.json"


def rank_spec(run: RankRun, entry: str) -> dict[str, Any]:
    """The launcher's spec of one rank run: the function each rank calls, how many, over how many
    nodes, and their spec."""
    return {"entry": entry, "nproc": run.nproc, "nnodes": run.nnodes, "spec": run.spec}


def node_env(env: dict[str, str], node_rank: int, nnodes: int) -> dict[str, str]:
    """A node's agent's environment where the nodes are one host: its share of the case's GPUs (node i
    the i-th equal slice of CUDA_VISIBLE_DEVICES), so its ranks pick theirs by LOCAL_RANK as on a node
    of their own."""
    visible = [g for g in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if g]
    if nnodes == 1 or not visible:
        return env
    per = len(visible) // nnodes
    return {**env, "CUDA_VISIBLE_DEVICES": ",".join(visible[node_rank * per:(node_rank + 1) * per])}


def rank_env(env: dict[str, str], token: str) -> dict[str, str]:
    """The ranks' environment: the case process's (its GPUs), multicast kept off, the launch's marker."""
    return {**multicast_off(env), RANKS_TOKEN_ENV: token}


class Torchrun:
    """Runs a rank entry as `nproc` processes, each on its own GPU (or CPU over gloo)."""

    name = "torchrun"

    def command(self, entry: str, nproc: int, spec_path: Path, out_dir: Path, nnodes: int = 1, node_rank: int = 0,
                endpoint: str = "", run_id: str = "") -> list[str]:
        """One torchrun agent: all `nproc` ranks on one node (`--standalone`), or node `node_rank`'s share
        of them, joining the others at `endpoint` (c10d; node rank 0 hosts the rendezvous store)."""
        if nnodes == 1:
            where = [f"--{RENDEZVOUS}", f"--nproc_per_node={nproc}"]
        else:
            where = [f"--nnodes={nnodes}", f"--node_rank={node_rank}", f"--nproc_per_node={nproc // nnodes}",
                     f"--rdzv_backend={NODES_RENDEZVOUS}", f"--rdzv_endpoint={endpoint}", f"--rdzv_id={run_id}",
                     f"--rdzv_conf=is_host={'true' if node_rank == 0 else 'false'}"]
        # torchrun's own log folder inside the launch's folder, which goes with it: by default each agent
        # makes a torchelastic_* folder in the system temp folder and leaves it there
        logs = f"--log-dir={out_dir / TORCHRUN_LOGS}"
        return [sys.executable, "-m", "torch.distributed.run", *where, logs, "-m", __name__, entry, str(spec_path),
                str(out_dir)]

    def agents(self, spec: dict[str, Any], env: dict[str, str], spec_path: Path, out_dir: Path,
               token: str) -> list[tuple[list[str], dict[str, str]]]:
        """The torchrun agents of a launch with their environments: one, or one per node of `nnodes`
        (on this host, each with its slice of the GPUs, over a localhost rendezvous unless the spec names
        its `rdzv_endpoint`: the same code path as nodes of their own)."""
        nproc, nnodes = int(spec["nproc"]), int(spec.get("nnodes", 1))
        endpoint = str(spec.get("rdzv_endpoint") or f"127.0.0.1:{free_port()}") if nnodes > 1 else ""
        return [(self.command(spec["entry"], nproc, spec_path, out_dir, nnodes, i, endpoint, token),
                 node_env(rank_env(env, token), i, nnodes)) for i in range(nnodes)]

    def run(self, spec: dict[str, Any], env: dict[str, str], timeout_s: float,
            on_progress: ProgressFn | None = None) -> ChildOutcome:
        """The ranks' outputs as `payload["ranks"]`, rank 0 first; else how the launch failed."""
        nproc, token, t0, since = int(spec["nproc"]), uuid.uuid4().hex, time.perf_counter(), oom_counts()
        with tempfile.TemporaryDirectory(prefix=rank_tmp_prefix()) as tmp:
            spec_path, out_dir = Path(tmp, "spec.json"), Path(tmp)
            spec_path.write_text(json.dumps(spec["spec"]))
            try:
                code, output = _start(self.agents(spec, env, spec_path, out_dir, token), timeout_s)
            except OSError as e:
                return ChildOutcome("failed", f"torchrun could not start: {e}", duration_s=time.perf_counter() - t0)
            finally:
                stop_marked(token, var=RANKS_TOKEN_ENV)  # a rank torchrun left behind (it was killed first)
            outputs = [_read(rank_file(out_dir, r)) for r in range(nproc)]
            errors = {r: err for r in range(nproc) if (err := _read(rank_file(out_dir, r, ".error"))) is not None}
        elapsed = time.perf_counter() - t0
        if code == 0 and all(o is not None for o in outputs):
            return ChildOutcome("ok", payload={"ranks": outputs}, duration_s=elapsed)
        return _failure(nproc, code, errors, output[-OUTPUT_TAIL:], timeout_s, outputs, elapsed, since)


def _read(path: Path) -> dict[str, Any] | None:
    return dict(json.loads(path.read_text())) if path.exists() else None


def _failure(nproc: int, code: int | None, errors: dict[int, dict[str, Any]], tail: str, timeout_s: float,
             outputs: list[dict[str, Any] | None], elapsed: float, since: OomCounts | None = None) -> ChildOutcome:
    """What a launch that did not end with every rank's output comes to, naming the rank that failed
    first where it can: one that ran out of memory; else one that died without raising (an exit, a
    signal: torchrun lists it, and the others then fail in their collectives); else the first to raise.
    A rank ended by SIGKILL is `oom` where the kernel says its out-of-memory killer sent it (the OOM-kill
    counts `since` the launch started, or the kernel log naming its pid), else `killed`."""
    def outcome(status: str, reason: str) -> ChildOutcome:
        return ChildOutcome(status, reason[:500], traceback=tail or None, duration_s=elapsed)

    if code is None:
        return outcome("timeout", f"the {nproc} ranks did not finish within {timeout_s:.1f}s and were stopped")
    raised = sorted(errors.items(), key=lambda kv: (not kv[1].get("oom"), float(kv[1].get("time", 0.0))))
    if raised and raised[0][1].get("oom"):
        rank, e = raised[0]
        return outcome("oom", f"rank {rank} of {nproc} ran out of memory: {e['type']}: {e['message']}")
    died = [(int(r), int(c), int(pid) if pid else None) for r, c, pid in _FAILED_RANK.findall(tail)
            if int(r) not in errors and int(c) != STOPPED_BY_TORCHRUN]
    if died:  # as a lone case process's end is read (isolation._exit_outcome)
        rank, exit_code, pid = died[0]
        if exit_code == -signal.SIGKILL:
            return outcome(*sigkill_outcome(f"rank {rank} of {nproc}", since, pid))
        how = f"died with {signal_name(exit_code)}" if exit_code < 0 else f"exited with code {exit_code}"
        status = "oom" if says_out_of_memory(tail) else "failed"
        return outcome(status, f"rank {rank} of {nproc} {how} (torchrun exited with code {code})")
    if raised:
        rank, e = raised[0]
        return outcome("failed", f"rank {rank} of {nproc} raised {e['type']}: {e['message']}")
    if says_out_of_memory(tail):
        return outcome("oom", f"a rank of {nproc} ran out of memory (torchrun exited with code {code})")
    missing = [r for r, o in enumerate(outputs) if o is None]
    if code == 0 and missing:
        return outcome("failed", f"rank {missing[0]} of {nproc} wrote no output (torchrun exited with code 0)")
    return outcome("failed", f"a rank of {nproc} failed (torchrun exited with code {code})")


POLL_S = 0.1  # how often the agents are looked at (several: one that failed ends the others)


def _start(agents: list[tuple[list[str], dict[str, str]]], timeout_s: float) -> tuple[int | None, str]:
    """The agents' exit code (the first non-zero one; None: timed out, stopped) and their output, one
    agent's after another's. An agent that failed ends the others (its ranks are gone, theirs would wait
    in a collective). torchrun stays in the case process's group, so the case's timeout kill reaches it."""
    with contextlib.ExitStack() as stack:
        logs = [stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")) for _ in agents]
        procs = [subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
                 for (cmd, env), log in zip(agents, logs, strict=True)]
        deadline = time.monotonic() + max(timeout_s, 0.0)
        try:
            while True:
                codes = [p.poll() for p in procs]
                failed = [c for c in codes if c not in (None, 0)]
                if failed or all(c is not None for c in codes) or time.monotonic() >= deadline:
                    break
                time.sleep(POLL_S)
        except BaseException:  # an interrupt: no rank outlives the case (the caller stops the marked ones); raised on
            for p in procs:
                with contextlib.suppress(ProcessLookupError):
                    p.kill()
            raise
        code: int | None = failed[0] if failed else (0 if all(c is not None for c in codes) else None)
        for p in procs:  # SIGTERM: torchrun stops its ranks; then SIGKILL
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        output = ""
        for log in logs:
            log.seek(0)
            output += log.read()
    return code, output


def run_rank_case(scenario: RankScenario, params: Any, ctx: CaseContext, timeout_s: float) -> ChildOutcome | None:
    """A rank scenario's case in its case process: each of its `rank_runs` through torchrun, within the
    case's `timeout_s` all together, then `collect` on their outputs. None when the case ran to the end;
    else the outcome of the launch that failed (its reason names the launch)."""
    runs = scenario.rank_runs(params, ctx)
    env = dict(os.environ)
    ctx.info["launcher"] = Torchrun.name
    spans = any(r.nnodes > 1 for r in runs)
    ctx.code_path["launcher"] = {"name": Torchrun.name, "rendezvous": NODES_RENDEZVOUS if spans else RENDEZVOUS,
                                 "nproc": {r.name: r.nproc for r in runs},
                                 **({"nnodes": {r.name: r.nnodes for r in runs}} if spans else {}),
                                 "multicast": multicast_settings(multicast_off(env))}
    launcher, deadline = Torchrun(), time.monotonic() + timeout_s
    outputs: dict[str, list[dict[str, Any]]] = {}
    for i, run in enumerate(runs):
        ctx.progress(i / len(runs), f"{run.name}: {run.nproc} ranks")
        out = launcher.run(rank_spec(run, scenario.rank_entry.target), env, deadline - time.monotonic())
        if out.status != "ok":
            out.reason = f"{run.name}: {out.reason}"
            return out
        outputs[run.name] = out.payload["ranks"]
    scenario.collect(params, ctx, outputs)
    return None


def main(argv: list[str]) -> int:
    """One rank (started by torchrun): run the entry on the spec, write what it returns, or what it raised."""
    if len(argv) != 3 or ":" not in argv[0]:
        print("usage: python -m llmbench.harness.launchers.torchrun MODULE:FUNCTION SPEC OUTDIR", file=sys.stderr)
        return 2
    module, _, function = argv[0].partition(":")
    rank, out_dir = int(os.environ["RANK"]), Path(argv[2])
    try:
        out = getattr(importlib.import_module(module), function)(json.loads(Path(argv[1]).read_text()))
    except Exception as e:
        write_atomic(rank_file(out_dir, rank, ".error"), json.dumps(
            {"type": type(e).__name__, "message": (str(e).strip().splitlines() or [""])[0][:300], "oom": _is_oom(e),
             "time": time.time()}))
        raise
    write_atomic(rank_file(out_dir, rank), json.dumps(out))
    return 0


def _is_oom(e: BaseException) -> bool:
    """An allocation failure in a rank: torch's OutOfMemoryError (where torch is loaded), MemoryError, or
    an error that says so."""
    torch = sys.modules.get("torch")
    oom_types: tuple[type[BaseException], ...] = (MemoryError,)
    if torch is not None and hasattr(torch, "OutOfMemoryError"):
        oom_types += (torch.OutOfMemoryError,)
    return isinstance(e, oom_types) or says_out_of_memory(str(e))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
