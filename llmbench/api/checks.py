"""The checks made before any work: `--out` folders and files, the compile cache, the machine (GPUs,
`--parallel`, `--ceilings`), and whether doctor's findings leave a stack worth measuring."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from llmbench.errors import UserError
from llmbench.hardware import nvml
from llmbench.hardware.fingerprint import local_slug
from llmbench.harness.doctor import Check
from llmbench.harness.isolation import check_gpu_count
from llmbench.harness.launch import check_parallel
from llmbench.measure import compile_cache
from llmbench.results import load


def check_out_dir(out: Path, option: str = "--out") -> None:
    """Refuse an --out FOLDER that is a file or cannot be created or written (exit 2, nothing written)."""
    if out.is_symlink() and not out.exists():
        raise UserError(f"{option} {str(out)!r} is a link to {os.readlink(out)!r}, which does not exist; create "
                        "that folder or give another")
    if out.exists() and not out.is_dir():
        raise UserError(f"{option} {str(out)!r} is a file; it must be a folder (result sets go to OUT/<gpu-slug>/)")
    if out.is_dir():
        _can_create_in(out, out, option)
        return
    writable_parent(out, option)


def check_out_file(out: Path | None, option: str = "--out") -> None:
    """Refuse an --out FILE that cannot be written before any work is done (exit 2, nothing written)."""
    if out is None:
        return
    if out.is_dir():
        raise UserError(f"{option} {str(out)!r} is a folder; give a file name, e.g. {str(out / 'out.txt')!r}")
    if out.exists() and not os.access(out, os.W_OK):
        raise UserError(f"{option} {str(out)!r} exists and is not writable")
    writable_parent(out, option)


def writable_parent(path: Path, option: str) -> None:
    """The nearest existing folder above `path` must be a folder we may write into."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{option} {str(path)!r}: {str(parent)!r} is a file, not a folder")
    _can_create_in(parent, path, option)


def _can_create_in(folder: Path, path: Path, option: str) -> None:
    """Create and remove a file in `folder`: the one test that holds for root, read-only mounts and
    pseudo-filesystems such as /proc alike (where os.access says yes to root, and writing fails)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise UserError(f"{option} {str(path)!r}: cannot write in {str(folder)!r} ({e.strerror or e})") from None


def check_compile_cache() -> None:
    """LLMBENCH_COMPILE_CACHE, a folder kept across runs, must be one this run can write into (a file
    there would fail every case process's start)."""
    setting = os.environ.get(compile_cache.USER_SETTING, "")
    if not setting or setting.lower() == "off":
        return
    folder, what = Path(setting), compile_cache.USER_SETTING
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{what} {setting!r} is a file; give a folder for torch.compile's caches, or 'off'")
    if folder.is_dir():
        _can_create_in(folder, folder, what)
    else:
        writable_parent(folder, what)


def ceilings_env(ceilings: Path | None, out: Path, also: Path | None = None) -> dict[str, str]:
    """The case processes' LLMBENCH_CEILINGS: --ceilings, else the user's own LLMBENCH_CEILINGS, else
    the run's results folder (then `also`, where it exists: oneshot's committed reference sets), as
    absolute paths (a case reads the same set from any working directory)."""
    from llmbench.hardware.roofline import CEILINGS_ENV

    if ceilings is not None:
        if not ceilings.exists():
            raise UserError(f"--ceilings {str(ceilings)!r} does not exist; give a ceilings result set (.json) or "
                            "a results folder (OUT of an earlier run, holding <gpu-slug>/ceilings-*.json)")
        if ceilings.is_file():
            try:
                load(ceilings)
            except (OSError, ValueError) as e:  # not JSON, not a result set: one line, not a traceback
                raise UserError(f"--ceilings {str(ceilings)!r} is not a result set: {e}".splitlines()[0]) from None
        return {CEILINGS_ENV: str(ceilings.resolve())}
    if os.environ.get(CEILINGS_ENV):
        return {}
    places = [out, *([also] if also is not None and also.is_dir() else [])]
    return {CEILINGS_ENV: os.pathsep.join(str(p.resolve()) for p in places)}


def check_machine(out: Path, gpus: str | None, cpu: bool, parallel: bool, ceilings: Path | None,
                  also: Path | None = None) -> dict[str, str]:
    """The checks every session makes before it reads a suite, in the order the CLI always made them;
    the case processes' extra environment."""
    check_out_dir(out)
    slug_dir = out / local_slug(gpus, cpu)  # where the result sets go: a file there fails before any case runs
    if slug_dir.exists() and not slug_dir.is_dir():
        raise UserError(f"--out {str(out)!r}: {str(slug_dir)!r} is a file; result sets go in a folder of that name")
    if slug_dir.is_dir():
        _can_create_in(slug_dir, slug_dir, "--out")
    check_compile_cache()
    check_gpu_count(gpus, cpu, len(nvml.handles()) if gpus is not None and not cpu else 0)
    check_parallel(gpus, parallel)
    return ceilings_env(ceilings, out, also)


def stack_problem(checks: list[Check], cpu: bool) -> str | None:
    """Why benchmarking here would measure nothing true: a failed doctor check, or (without cpu) a
    GPU that torch cannot use."""
    failed = [c for c in checks if c.level == "fail"]
    if failed:
        return "; ".join(f"{c.name}: {c.detail}" for c in failed)
    cuda = next((c for c in checks if c.name == "cuda"), None)
    if not cpu and cuda is not None and cuda.level != "ok":
        seen = len(nvml.handles())
        if seen:
            return (f"torch sees no CUDA GPU while the driver (NVML) sees {seen}: the driver, CUDA and torch "
                    "do not match (a CPU build of torch, or a driver too old for torch's CUDA)")
        return "no NVIDIA GPU here (neither NVML nor torch finds one); oneshot --cpu runs on the CPU"
    return None
