"""`llmbench doctor`: is the stack sound? `torch.cuda.is_available()` can be True while work still runs
on the CPU or runs badly (driver/CUDA/PyTorch mismatch); a slow CPU can hide a fast GPU. Checks run
in a case process, with the same GPU selection a run would use; on a node of several GPUs they also
check peer access, NCCL and that NVLink multicast stays off in the processes llmbench starts."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from llmbench.hardware import nvml

Level = Literal["ok", "warn", "fail"]
OPTIONAL = {  # packages of no engine; each engine says what it needs and how to install it (Engine.install)
    "bitsandbytes": "pip install bitsandbytes", "torchao": "pip install torchao",
    "transformer_engine": "pip install 'llmbench[te]'",
}


@dataclass
class Check:
    name: str
    level: Level
    detail: str


def python_loop_score() -> float:
    """Single-thread CPU speed in millions of simple Python loop iterations per second. Eager decoding
    and small-batch training are bound by this, not by the GPU."""
    n = 2_000_000
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i & 7
    return n / (time.perf_counter() - t0) / 1e6


def collect_checks() -> list[Check]:
    import torch

    checks = [Check("torch", "ok", f"{torch.__version__} (CUDA build: {torch.version.cuda or 'none'})")]
    driver = nvml.driver_version()
    checks.append(Check("nvml", "ok" if driver else "warn",
                        f"driver {driver}" if driver else "NVML not available: no energy/power/clock readings"))
    checks += mig_checks()
    from llmbench.hardware.power import default_state_path

    if default_state_path().exists():
        checks.append(Check(
            "power limit", "warn", f"{default_state_path()} names a power limit a killed llmbench run left changed: "
            "the next case with power_limit_w (run as root) restores it first (or nvidia-smi -pl, then delete it)"))
    if not torch.cuda.is_available():
        checks.append(
            Check("cuda", "warn", "no CUDA GPU visible to torch: cases run on the CPU, GPU cases are skipped")
        )
    else:
        p = torch.cuda.get_device_properties(0)
        checks.append(Check("gpu", "ok", f"{p.name}, cc {p.major}.{p.minor}, {p.total_memory / 2**30:.1f} GiB, "
                            f"{torch.cuda.device_count()} visible"))
        a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        for _ in range(3):  # cuBLAS handle creation and heuristics stay out of the figure
            b = a @ a
        torch.cuda.synchronize()
        ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ev0.record()
        for _ in range(10):
            b = a @ a
        ev1.record()
        torch.cuda.synchronize()
        tflops = 10 * 2 * 4096**3 / (ev0.elapsed_time(ev1) / 1e3) / 1e12
        level: Level = "ok" if b.is_cuda and tflops > 5 else "fail"
        checks.append(Check("gpu matmul", level, f"a 4096^3 bf16 matmul ran on {b.device} at {tflops:.0f} TFLOP/s"))
    checks += node_checks()
    score = python_loop_score()
    checks.append(Check("cpu single-thread", "ok",
                        f"{score:.0f} M Python loop iterations/s (host-bound work, e.g. eager batch-1 decode, "
                        "scales with this)"))
    for mod, how in OPTIONAL.items():
        there = importlib.util.find_spec(mod) is not None
        checks.append(Check(f"package {mod}", "ok" if there else "warn", "installed" if there else f"missing: {how}"))
    from llmbench.engines.base import ENGINES

    for name, engine in ENGINES:
        if engine.packages:
            missing = engine.missing_reason()
            checks.append(Check(f"engine {name}", "warn" if missing else "ok", missing or "installed"))
    return checks


def node_checks(cuda: Any | None = None) -> list[Check]:
    """On a node of several visible GPUs (`cuda`: torch.cuda, or a stand-in): peer access and NVLink
    between them, the NCCL version, and that the NVLink-multicast variables reach the processes the
    launchers start; nothing for one GPU or none."""
    if cuda is None:
        import torch

        cuda = torch.cuda
    count = cuda.device_count() if cuda.is_available() else 0
    if count < 2:
        return []
    return [peer_check(cuda, count), nccl_check(cuda), multicast_check()]


def peer_check(cuda: Any, count: int) -> Check:
    """Whether each visible GPU can reach every other directly (P2P: NVLink or PCIe peer access), and
    how they are joined as NVML sees it (hardware/topology.py)."""
    from llmbench.hardware.fingerprint import node_links

    pairs = [(i, j) for i in range(count) for j in range(count) if i != j]
    missing = [f"{i}->{j}" for i, j in pairs if not cuda.can_device_access_peer(i, j)]
    uuids = [str(getattr(cuda.get_device_properties(i), "uuid", "")) for i in range(count)]
    joined = node_links(uuids).get("topology") or "topology not readable through NVML"
    if missing:
        return Check("gpu peers", "warn", f"{count} GPUs ({joined}); no peer access {', '.join(missing)}: "
                     "collectives go through host memory")
    return Check("gpu peers", "ok", f"{count} GPUs, peer access between every pair ({joined})")


def nccl_check(cuda: Any) -> Check:
    """The NCCL torch ships with (the collectives' library); a torch built without it cannot run GPU ranks."""
    try:
        version = cuda.nccl.version()
    except (AttributeError, RuntimeError) as e:
        return Check("nccl", "fail", f"torch has no usable NCCL ({type(e).__name__}: {e}): GPU ranks cannot run")
    text = ".".join(str(v) for v in version) if isinstance(version, tuple) else str(version)
    return Check("nccl", "ok", f"NCCL {text}")


def multicast_check() -> Check:
    """Spawn a process with the environment the torchrun launcher gives its ranks (built from this case
    process's, which the runner's child-env builder made) and read the multicast variables back."""
    from llmbench.hardware.topology import MULTICAST_OFF_ENV, multicast_settings, multicast_wanted
    from llmbench.harness.launchers.torchrun import rank_env

    env = rank_env(dict(os.environ), "doctor")
    code = f"import json, os; print(json.dumps({{k: os.environ.get(k) for k in {list(MULTICAST_OFF_ENV)!r}}}))"
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                              check=True)
        seen = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        return Check("nvlink multicast", "fail", f"could not read a child process's environment: {e}")
    expected = multicast_settings(env)
    if seen != expected:
        lost = ", ".join(f"{k}={expected[k]} arrived as {seen.get(k)}" for k in expected if seen.get(k) != expected[k])
        return Check("nvlink multicast", "fail", f"the multicast variables do not reach child processes: {lost}")
    shown = " ".join(f"{k}={v}" for k, v in seen.items())
    if multicast_wanted(env):
        return Check("nvlink multicast", "warn", f"NCCL_NVLS_ENABLE=1 asks for NVLink multicast, so ranks may use it "
                     f"({shown}); on a shared machine it can put the GPUs out of service")
    by_machine = [k for k in MULTICAST_OFF_ENV if k in os.environ]
    source = f"the machine sets {', '.join(by_machine)}" if by_machine else "none set by the machine"
    return Check("nvlink multicast", "ok", f"off in the processes the launchers start ({shown}; {source})")


def mig_checks(backend: object | None = None) -> list[Check]:
    """The MIG instances, listed (read-only); nothing when there are none."""
    from llmbench.hardware import mig

    items = mig.all_instances(backend)
    return [Check("mig", "ok", mig.describe(items))] if items else []


def run_checks(gpus: str | None) -> list[Check]:
    from llmbench.harness.isolation import child_env, run_child

    with tempfile.TemporaryDirectory(prefix="llmbench-doctor-") as tmp:
        out = Path(tmp, "checks.json")
        code, tail, _ = run_child(["doctor", str(out)], child_env(gpus), timeout_s=300)
        if code != 0 or not out.exists():
            return [Check("case process", "fail", f"the check process failed (exit code {code}): {tail[-1500:]}")]
        return [Check(**c) for c in json.loads(out.read_text())]


def write_checks(path: Path) -> None:
    from llmbench.results import write_atomic

    write_atomic(path, json.dumps([asdict(c) for c in collect_checks()]))
