"""Transformer Engine is imported against torch's cuDNN (the fp8-training TE cases failed on the
H200 with a system libcudnn_cnn loaded beside torch's libcudnn_graph)."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

from llmbench.engines import te_import


def _fake_cudnn_wheel(root: Path) -> Path:
    pkg = root / "nvidia" / "cudnn"
    (pkg / "lib").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    return pkg


@pytest.fixture()
def wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pkg = _fake_cudnn_wheel(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "nvidia" or m.startswith("nvidia.")]:
        monkeypatch.delitem(sys.modules, name)
    importlib.invalidate_caches()
    monkeypatch.delenv("CUDNN_PATH", raising=False)
    monkeypatch.delenv("CUDNN_HOME", raising=False)
    monkeypatch.setitem(sys.modules, "transformer_engine", None)  # not installed here: the import fails
    return pkg


def test_cudnn_path_points_at_torchs_cudnn_before_te_is_imported(wheel: Path) -> None:
    assert Path(te_import.torch_cudnn_dir() or "") == wheel
    with pytest.raises(ImportError):
        te_import.import_te()
    assert os.environ["CUDNN_PATH"] == str(wheel)


def test_a_cudnn_path_the_user_set_is_kept(wheel: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDNN_PATH", "/opt/my-cudnn")
    with pytest.raises(ImportError):
        te_import.import_te()
    assert os.environ["CUDNN_PATH"] == "/opt/my-cudnn"
