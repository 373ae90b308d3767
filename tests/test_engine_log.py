"""A tensor-parallel vLLM engine's all-reduce, read from its workers' log: the tee passes every line
through (progress lines still reach the harness) and keeps the all-reduce lines, also those of child
processes; the path names the enabled backends; multicast backends are found (and fail the case
where multicast is off). The log lines are vLLM 0.26's own (vllm/distributed/device_communicators)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from llmbench.engines.log_tee import LogTee
from llmbench.engines.vllm import ALL_REDUCE_LOG, all_reduce_path, multicast_used

CLEAN = [
    "(Worker_TP0 pid=11) INFO 11-25 20:01:02 [cuda_communicator.py:264] Using ['CUSTOM', 'PYNCCL'] all-reduce "
    "backends (in dispatch order) for group 'tp:0' out of potential backends: ['CUSTOM', 'SYMM_MEM', 'PYNCCL'].",
    "(Worker_TP0 pid=11) INFO 11-25 20:01:02 [flashinfer_all_reduce.py:108] Using flashinfer allreduce backend: trtllm",
]
MULTICAST = [
    "INFO [cuda_communicator.py:264] Using ['SYMM_MEM', 'PYNCCL'] all-reduce backends (in dispatch order) for "
    "group 'tp:0' out of potential backends: ['CUSTOM', 'SYMM_MEM', 'PYNCCL'].",
    "INFO [flashinfer_all_reduce.py:121] Auto-selected flashinfer allreduce backend: mnnvl",
    "INFO [flashinfer_all_reduce.py:170] Initialized FlashInfer Allreduce norm fusion workspace with backend=mnnvl",
]


def test_the_path_names_the_enabled_backends_not_the_potential_ones() -> None:
    path = all_reduce_path([line for line in CLEAN if ALL_REDUCE_LOG.search(line)])
    assert path == {"backends": {"tp:0": ["CUSTOM", "PYNCCL"]}, "flashinfer_fusion": ["trtllm"]}
    assert multicast_used(path) == []  # SYMM_MEM was only a potential backend


def test_multicast_backends_are_found() -> None:
    path = all_reduce_path(MULTICAST)
    assert path["backends"] == {"tp:0": ["SYMM_MEM", "PYNCCL"]}
    assert multicast_used(path) == ["the symmetric-memory all-reduce (group tp:0)", "FlashInfer's mnnvl all-reduce"]
    assert all_reduce_path([]) == {"backends": "not logged", "flashinfer_fusion": "off"}


def test_the_tee_passes_everything_on_and_keeps_child_lines(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    script = f"""
import subprocess, sys
sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
import re
from llmbench.engines.log_tee import LogTee
tee = LogTee(re.compile("all-reduce"))
print("progress 0.5", flush=True)
subprocess.run([sys.executable, "-c", {f"print({CLEAN[0]!r})"!r}])
tee.close()
print("kept:", len(tee.lines), tee.lines[0][:20] if tee.lines else "", flush=True)
"""
    with out.open("w") as f:
        subprocess.run([sys.executable, "-c", script], stdout=f, check=True, timeout=60)
    lines = out.read_text().splitlines()
    assert lines[0] == "progress 0.5"  # the process's own lines pass through, in order
    assert lines[1] == CLEAN[0]  # and the child's
    assert lines[2] == f"kept: 1 {CLEAN[0][:20]}"


def test_the_tee_keeps_only_matching_lines() -> None:
    tee = LogTee(re.compile(r"^keep"))
    try:
        os.write(1, b"keep me\ndrop me\n")  # fd 1, as a child process writes (pytest swaps sys.stdout)
    finally:
        tee.close(wait_s=0.5)
    assert tee.lines == ["keep me"]
