"""The environment fingerprint of a result set (docs/design.md): GPU, driver, CUDA, power limit, MIG mode,
GPU count and how the GPUs are joined (hardware/topology.py), package versions, CPU, llmbench version and
commit. Nothing identifying: no host or user names,
no home paths."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmbench import __version__
from llmbench.hardware import mig, nvml, topology
from llmbench.hardware.specs import slug_for
from llmbench.precision import DeviceInfo

PACKAGES = (  # engines add their own distributions (Engine.distributions), passed down by the case process
    "torch", "triton", "numpy", "transformers", "accelerate", "peft", "bitsandbytes", "torchao",
    "transformer-engine", "pydantic", "nvidia-ml-py", "timm",
)


def package_versions(extra: Sequence[str] = ()) -> dict[str, str]:
    out = {}
    for name in dict.fromkeys([*PACKAGES, *extra]):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def cpu_slug() -> str:
    """The results folder of runs without a GPU: one per CPU architecture."""
    return f"cpu-{platform.machine().lower()}"


def _local_gpu(gpus: str | None, cpu: bool) -> Any | None:
    """The NVML handle of the first GPU a run here would use (None: no GPU, or --cpu)."""
    hs = [] if cpu else nvml.handles()
    if not hs:
        return None
    first = (gpus or "0").split(",")[0]
    return hs[int(first)] if first.isdigit() and int(first) < len(hs) else hs[0]


def local_slug(gpus: str | None = None, cpu: bool = False) -> str:
    """The slug of the GPU a run here would use, read through NVML (no torch import, so --dry-run
    stays quick); `cpu-<arch>` without one. A MIG or GPU UUID selection reads the first device."""
    h = _local_gpu(gpus, cpu)
    if h is not None:
        info = nvml.device_summary(h)
        if info.get("name"):
            return slug_for(str(info["name"]), info.get("memory_gib"))
    return cpu_slug()


def local_device(gpus: str | None = None, cpu: bool = False) -> DeviceInfo:
    """The device a case process here would see, read as `local_slug` reads it (NVML, no torch): what
    `--dry-run` asks each scenario whether it can run on (a case it would skip costs no time)."""
    h = _local_gpu(gpus, cpu)
    info = nvml.device_summary(h) if h is not None else {}
    if not info.get("name"):
        return DeviceInfo("cpu", f"CPU {cpu_info()['model']}")
    cc = nvml.call("nvmlDeviceGetCudaComputeCapability", h)
    return DeviceInfo("cuda", str(info["name"]), (int(cc[0]), int(cc[1])) if cc else None, info.get("memory_gib"))


# CPU flags that give a half-precision matmul native instructions; without one, torch emulates it in
# software (about 1 GFLOP/s on a 2-core AVX2 EPYC: a 4096^3 bf16 product took over two minutes)
NATIVE_HALF_FLAGS = {"bf16": ("avx512_bf16", "amx_bf16", "bf16"), "fp16": ("avx512_fp16", "amx_fp16", "fphp")}


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags (/proc/cpuinfo's `flags`, or `Features` on Arm); None where unreadable."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def cpu_native_matmul(precision: str) -> bool:
    """Whether this CPU multiplies `precision` with native instructions (True where the flags cannot be
    read, or for precisions it always does, such as fp32)."""
    flags, needs = cpu_flags(), NATIVE_HALF_FLAGS.get(precision)
    return flags is None or needs is None or any(f in flags for f in needs)


def cpu_info() -> dict[str, Any]:
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"model": model or platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "usable_cores": affinity, "arch": platform.machine()}


def llmbench_info() -> dict[str, Any]:
    """The llmbench version and the commit it runs from. LLMBENCH_GIT_COMMIT, when set, wins: a tree
    copied to a rented box may carry no .git, or a stale one whose HEAD is not the code that runs."""
    pinned = os.environ.get("LLMBENCH_GIT_COMMIT", "").strip()
    if pinned:
        return {"version": __version__, "git_commit": pinned, "git_dirty": None}
    root = Path(__file__).resolve().parents[2]
    commit = dirty = None
    if not own_checkout(root):  # an installed package, or a tree inside someone else's repository
        return {"version": __version__, "git_commit": None, "git_dirty": None}
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "-q", "HEAD"],
                              capture_output=True, text=True, timeout=5)
        commit = head.stdout.strip() if head.returncode == 0 and head.stdout.strip() else None
        if commit:
            dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                        capture_output=True, text=True, timeout=5).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return {"version": __version__, "git_commit": commit, "git_dirty": dirty}


def own_checkout(root: Path) -> bool:
    """Whether `root` is llmbench's own checkout: it holds llmbench's pyproject.toml and is the top level
    of the git repository it lies in. A virtualenv inside a user's project would otherwise record the
    user's HEAD as llmbench's commit."""
    try:
        named = 'name = "llmbench"' in (root / "pyproject.toml").read_text(encoding="utf-8")
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return False
    return named and top.returncode == 0 and Path(top.stdout.strip()).resolve() == root.resolve()


def gpu_info() -> dict[str, Any] | None:
    """The GPUs torch sees in this process (after CUDA_VISIBLE_DEVICES), described from torch + NVML."""
    import torch

    if not torch.cuda.is_available():
        return None
    count = torch.cuda.device_count()
    props = torch.cuda.get_device_properties(0)
    mem_gib = round(props.total_memory / 2**30, 1)
    info: dict[str, Any] = {
        "name": props.name,
        "slug": slug_for(props.name, mem_gib),
        "count": count,
        "compute_capability": f"{props.major}.{props.minor}",
        "memory_gib": mem_gib,
        "sm_count": props.multi_processor_count,
    }
    l2 = getattr(props, "L2_cache_size", None)
    if l2:
        info["l2_mib"] = round(l2 / 2**20, 1)
    uuid = str(getattr(props, "uuid", ""))
    h = nvml.handle_by_uuid(uuid) if uuid else None
    if h is not None:
        summary = nvml.device_summary(h)
        summary.pop("name", None)
        summary.pop("memory_gib", None)
        summary.pop("pci_bus_id", None)
        info.update(summary)
    info["driver"] = nvml.driver_version()
    instances = mig.all_instances()  # read-only: what the GPUs are split into (none without MIG)
    if instances:
        info["mig_instances"] = instances
    info["visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    # the slice this process runs on (--gpus MIG-<uuid>): what `compare` scales the full GPU's figures by
    info["mig_profile"] = mig.slice_profile({"name": props.name, "mig_instances": instances,
                                             "visible_devices": info["visible_devices"]})
    uuids = [str(getattr(torch.cuda.get_device_properties(i), "uuid", "")) for i in range(count)]
    info["id_hash"] = gpu_id_hash(uuids)
    info.update(node_links(uuids))
    return {k: v for k, v in info.items() if v is not None}


def node_links(uuids: list[str]) -> dict[str, Any]:
    """How the visible GPUs (by UUID, in torch's order) are joined: `interconnect` (NVLink links up and
    the PCIe link of each) and, for several GPUs, the `topology` label; nothing where NVML has no handle."""
    handles = [nvml.handle_by_uuid(u) if u else None for u in uuids]
    if not handles or any(h is None for h in handles):
        return {}
    links = topology.interconnect(handles)
    label = topology.topology_label(links)
    return {"interconnect": links, **({"topology": label} if label else {})}


def gpu_id_hash(uuids: list[str]) -> str | None:
    """An anonymous id of the visible GPUs (a short hash of their UUIDs, never the UUIDs): tells runs on
    the same GPUs from runs on other machines when result sets are pooled; None without UUIDs."""
    known = sorted(u for u in uuids if u)
    return hashlib.sha256(b"llmbench-gpu:" + ",".join(known).encode()).hexdigest()[:12] if known else None


def collect(packages: Sequence[str] = ()) -> dict[str, Any]:
    """The whole `env` block of a result set, as seen from a case process; `packages`: distributions
    whose versions it records beside PACKAGES (the engines')."""
    import torch

    gpu = gpu_info()
    env: dict[str, Any] = {
        "gpu": gpu or {"name": "none (CPU)", "slug": cpu_slug(), "count": 0},
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "packages": package_versions(packages),
        "cpu": cpu_info(),
        "torch_threads": torch.get_num_threads(),
    }
    return env


def environment_warnings(env: dict[str, Any]) -> list[str]:
    """Things that make numbers less trustworthy, said once at the top of a result set."""
    warnings = []
    gpu = env.get("gpu", {})
    if gpu.get("mig_mode") == "enabled":
        where = f"the MIG slice {gpu['mig_profile']}" if gpu.get("mig_profile") else "the visible MIG slice"
        warnings.append(f"MIG is enabled on this GPU: figures are for {where}, not the whole GPU")
    busy = host_load_warning()
    if busy:
        warnings.append(busy)
    return warnings


BUSY_LOAD_PER_CPU = 0.5  # a load average above this share of the CPUs: other work competes with the cases


def host_load_warning() -> str | None:
    """A warning when the host is busy as the run starts (its 1-minute load average against its CPU
    count): CPU figures moved severalfold between runs on a loaded machine, and a GPU case's host side
    (launches, the serving client) slows too. None on an idle host or where no load average is kept."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    cpus = os.cpu_count() or 1
    if load <= BUSY_LOAD_PER_CPU * cpus:
        return None
    return (f"the host was busy when the run started (load average {load:.1f} on {cpus} CPUs): figures, CPU ones "
            "most, may move between runs; measure on an idle machine")
