"""The multi-process launcher: one case's ranks, one process per GPU of its placement, started by
torchrun (torch.distributed.run --standalone) from inside the case process, and the file protocol
between them. A scenario that declares `rank_entry` (scenarios.base.RankEntry: a module and a
function) gets a `Torchrun` on its context (`ctx.run_ranks(spec, nproc)`); it never starts a process.

The protocol: the launcher writes the case's rank spec to SPEC (JSON) in a temporary folder and starts
`python -m llmbench.harness.launch_ranks MODULE:FUNCTION SPEC OUTDIR` under torchrun; each rank calls
`FUNCTION(spec)` and writes what it returns to OUTDIR/rank<RANK>.json (atomically); the launcher
returns the ranks' dicts, rank 0 first. Ranks see the case process's CUDA_VISIBLE_DEVICES (its slots)
and pick theirs by LOCAL_RANK.

Failure: a rank that exits non-zero, or fewer rank files than ranks, raises in the case process
(`torch.OutOfMemoryError` when the output says a rank ran out of memory, else RuntimeError), which the
worker turns into the case's `oom` / `failed` status. torchrun stays in the case process's process
group, so the case's timeout kill (harness/isolation.py) stops it; the ranks, which torchrun starts in
sessions of their own, carry the case's marker and are stopped with what it leaves (also when the
runner dies). The rank launch has the case's timeout too, after which torchrun is terminated (it stops
its ranks) and then killed."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from llmbench.harness.isolation import rank_tmp_prefix, says_out_of_memory
from llmbench.results import write_atomic
from llmbench.scenarios.base import RankEntry, Scenario

OUTPUT_TAIL = 3000
STOP_GRACE_S = 10.0  # torchrun's time to stop its ranks after SIGTERM


def rank_file(out_dir: Path, rank: int) -> Path:
    return out_dir / f"rank{rank}.json"


class Torchrun:
    """Runs a scenario's rank entry as `nproc` processes, each on its own GPU (or CPU over gloo)."""

    def __init__(self, entry: RankEntry, timeout_s: float) -> None:
        self.entry = entry
        self.timeout_s = timeout_s

    def command(self, nproc: int, spec_path: Path, out_dir: Path) -> list[str]:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                "-m", __name__, f"{self.entry.module}:{self.entry.function}", str(spec_path), str(out_dir)]

    def run(self, spec: dict[str, Any], nproc: int) -> list[dict[str, Any]]:
        """The ranks' outputs, rank 0 first; raises when a rank failed (see the module's docstring)."""
        with tempfile.TemporaryDirectory(prefix=rank_tmp_prefix()) as tmp:
            spec_path, out_dir = Path(tmp, "spec.json"), Path(tmp)
            spec_path.write_text(json.dumps(spec))
            code, output = self._start(self.command(nproc, spec_path, out_dir))
            files = [rank_file(out_dir, r) for r in range(nproc)]
            if code == 0 and all(f.exists() for f in files):
                return [json.loads(f.read_text()) for f in files]
        tail = output[-OUTPUT_TAIL:]
        if code is None:
            raise TimeoutError(f"torchrun with {nproc} processes did not finish within {self.timeout_s:g}s:\n{tail}")
        if says_out_of_memory(tail):
            import torch

            raise torch.OutOfMemoryError(f"a rank ran out of memory ({nproc} processes):\n{tail}")
        raise RuntimeError(f"torchrun with {nproc} processes exited with code {code}:\n{tail}")

    def _start(self, cmd: list[str]) -> tuple[int | None, str]:
        """The exit code (None: timed out, stopped) and the output (stderr, else stdout)."""
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True, errors="replace")
        try:
            out, err = proc.communicate(timeout=self.timeout_s)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                out, err = proc.communicate(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            code = None
        except BaseException:  # an interrupt: no rank outlives the case; raised on
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            raise
        return code, err or out


def rank_launcher(scenario: Scenario, timeout_s: float) -> Torchrun | None:
    """The rank launcher a case process gives its scenario's context: a Torchrun where the scenario
    declares a rank entry, else none."""
    return Torchrun(scenario.rank_entry, timeout_s) if scenario.rank_entry is not None else None


def main(argv: list[str]) -> int:
    """One rank (started by torchrun): run the entry on the spec, write what it returns."""
    if len(argv) != 3 or ":" not in argv[0]:
        print("usage: python -m llmbench.harness.launch_ranks MODULE:FUNCTION SPEC OUTDIR", file=sys.stderr)
        return 2
    module, _, function = argv[0].partition(":")
    entry = getattr(importlib.import_module(module), function)
    out = entry(json.loads(Path(argv[1]).read_text()))
    write_atomic(rank_file(Path(argv[2]), int(os.environ["RANK"])), json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
