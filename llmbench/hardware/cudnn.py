"""Import Transformer Engine against torch's cuDNN.

TE's core library lists every cuDNN sub-library (libcudnn_graph, _ops, _cnn, ...) as a load-time
dependency and has no RUNPATH, so the dynamic loader takes each one that is not loaded yet from the
system's folders. Torch loads cuDNN from its own wheel (nvidia/cudnn/lib). Once torch has loaded some
of its sub-libraries (a model's first SDPA or convolution), importing TE mixed two cuDNN builds in one
process: `libcudnn_cnn.so.9: undefined symbol ... version libcudnn_graph.so.9` (seen on the H100 and
the H200 test machines, whose system cuDNN differs from torch's). Loading every sub-library from
torch's cuDNN folder first makes the loader reuse those by soname, so TE runs on torch's cuDNN.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

# Dependency order: each sub-library needs the ones before it (graph first), so loading them in this
# order never lets the loader pull a missing dependency from another folder.
CUDNN_SUBLIBS = ("graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv")
MAPS = Path("/proc/self/maps")


def loaded_cudnn_dirs(maps_lines: Iterable[str]) -> dict[str, set[str]]:
    """Folders of the cuDNN libraries mapped into a process ({library file name: folders}), from the
    lines of /proc/<pid>/maps."""
    out: dict[str, set[str]] = {}
    for line in maps_lines:
        parts = line.split(maxsplit=5)
        if len(parts) < 6:
            continue
        path = parts[5].strip()
        name = os.path.basename(path)
        if name.startswith("libcudnn") and ".so" in name:
            out.setdefault(name.split(".so")[0], set()).add(os.path.dirname(path))
    return out


def mixed_cudnn(maps_lines: Iterable[str]) -> str | None:
    """A one-line description of cuDNN sub-libraries loaded from more than one folder, or None. The
    front library libcudnn.so itself is left out: TE also opens the system's by name, a second copy
    that does no harm, since symbols resolve to the first one loaded (torch's)."""
    dirs = {n: ds for n, ds in loaded_cudnn_dirs(maps_lines).items() if n != "libcudnn"}
    folders = sorted({d for ds in dirs.values() for d in ds})
    if len(folders) < 2:
        return None
    where = "; ".join(f"{d}: {', '.join(sorted(n for n, ds in dirs.items() if d in ds))}" for d in folders)
    return f"cuDNN libraries loaded from {len(folders)} folders ({where})"


def sublib_paths(folder: Path) -> list[Path]:
    """The cuDNN sub-libraries in `folder`, in dependency order (versioned names, e.g. libcudnn_ops.so.9)."""
    out: list[Path] = []
    for sub in CUDNN_SUBLIBS:
        out += sorted(folder.glob(f"libcudnn_{sub}.so.*[0-9]"))[:1]
    return out


def preload_torch_cudnn(
    maps: Path = MAPS, load: Callable[[str], Any] = lambda p: ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)
) -> list[str]:
    """Load every cuDNN sub-library from the folder of the libcudnn that torch loaded; returns what was
    loaded (nothing where torch's cuDNN is not mapped, e.g. a CPU build)."""
    import torch

    if torch.cuda.is_available():
        torch.backends.cudnn.version()  # maps torch's libcudnn.so.9 where it is loaded lazily
    if not maps.is_file():
        return []
    folders = loaded_cudnn_dirs(maps.read_text().splitlines()).get("libcudnn", set())
    if len(folders) != 1:
        return []
    paths = [str(p) for p in sublib_paths(Path(next(iter(folders))))]
    for p in paths:
        load(p)
    return paths


def import_transformer_engine() -> Any:
    """`transformer_engine.pytorch`, imported after torch's cuDNN sub-libraries are loaded; raises
    RuntimeError naming the folders when cuDNN still ends up mixed."""
    preload_torch_cudnn()
    import transformer_engine.pytorch as te

    mixed = mixed_cudnn(MAPS.read_text().splitlines()) if MAPS.is_file() else None
    if mixed:
        raise RuntimeError(f"Transformer Engine and torch use different cuDNN builds: {mixed}")
    return te
