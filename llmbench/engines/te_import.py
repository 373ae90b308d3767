"""Import Transformer Engine so that it loads the cuDNN torch already uses.

TE finds cuDNN through CUDNN_PATH/CUDNN_HOME, then CUDA_HOME, then the system's libraries, and only
last through the `nvidia-cudnn` wheel that a pip-installed torch loads. On a machine with both (the
H100/H200 test machines), a process that had run cuDNN work in torch before importing TE loaded the
system's libcudnn_cnn against torch's libcudnn_graph and failed with an undefined symbol
(fp8-training's TE cases, 2026-11-23). Pointing CUDNN_PATH at torch's cuDNN, when the user has not
set one, makes both use the same library."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any


def torch_cudnn_dir() -> str | None:
    """The folder of the `nvidia-cudnn` wheel (torch's cuDNN), or None where torch uses another one."""
    spec = importlib.util.find_spec("nvidia.cudnn") if importlib.util.find_spec("nvidia") else None
    roots = list(spec.submodule_search_locations or []) if spec else []
    return next((r for r in roots if (Path(r) / "lib").is_dir()), None)


def import_te() -> Any:
    """`transformer_engine.pytorch`, loaded against torch's cuDNN (CUDNN_PATH set unless the user set
    CUDNN_PATH or CUDNN_HOME)."""
    if not (os.environ.get("CUDNN_PATH") or os.environ.get("CUDNN_HOME")):
        found = torch_cudnn_dir()
        if found:
            os.environ["CUDNN_PATH"] = found
    import transformer_engine.pytorch as te

    return te
