"""The vision scenario on the CPU. timm is not installable beside the CPU torch of the test machine (it
pulls a CUDA torchvision), so a stand-in `timm` with the one call the scenario uses (create_model) runs
the scenario's own code: precisions, memory format, train and inference steps, metrics."""

from __future__ import annotations

import importlib.machinery
import sys
import types
from typing import Any

import pytest

from llmbench.harness.worker import run_case
from llmbench.metrics import METRICS
from llmbench.precision import DeviceInfo
from llmbench.scenarios.vision import Vision, VisionParams

FAST = {"warmup_iters": 1, "min_iters": 2, "min_seconds": 0.0, "min_sample_s": 0.0}
CPU = DeviceInfo("cpu", "CPU test")
H200 = DeviceInfo("cuda", "NVIDIA H200", (9, 0), 141.0)


def _module(name: str, **attrs: Any) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__spec__ = importlib.machinery.ModuleSpec(name, None)
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


@pytest.fixture
def stub_timm(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    import torch

    calls: list[dict[str, Any]] = []

    def create_model(name: str, pretrained: bool, num_classes: int, **kw: Any) -> torch.nn.Module:
        calls.append({"name": name, "pretrained": pretrained, **kw})
        if name.startswith("unknown"):
            raise RuntimeError(f"Unknown model ({name})")
        if kw and not name.startswith("vit"):
            raise TypeError("unexpected keyword argument 'img_size'")
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 4, stride=4), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                  torch.nn.Flatten(), torch.nn.Linear(8, num_classes))
        net.pretrained_cfg = {"input_size": (3, 16, 16)}  # type: ignore[assignment]
        return net

    monkeypatch.setitem(sys.modules, "timm", _module("timm", create_model=create_model))
    monkeypatch.setitem(sys.modules, "torchvision", _module("torchvision"))
    return calls


def _run(**params: Any) -> dict[str, Any]:
    return run_case({"scenario": "vision", "params": {"num_classes": 10, "batch": 4, **params},
                     "settings": FAST, "device": "cpu"})


@pytest.mark.parametrize("precision", ["fp32", "amp-bf16", "fp16"])
@pytest.mark.parametrize("mode", ["train", "infer"])
def test_runs_each_precision_and_mode(stub_timm: list[dict[str, Any]], precision: str, mode: str) -> None:
    out = _run(model="resnet_like", precision=precision, mode=mode, channels_last=True)
    assert out["status"] == "ok", out
    speed = out["metrics"][f"{mode}_samples_per_s"]
    assert speed["value"] > 0
    assert ("step_ms" if mode == "train" else "time_ms") in out["metrics"]
    assert set(out["metrics"]) <= set(METRICS)
    assert out["info"]["image_size"] == [16, 16]  # the model's own input size
    assert stub_timm[0]["pretrained"] is False


def test_image_size_goes_to_vit_and_conv_nets_fall_back(stub_timm: list[dict[str, Any]]) -> None:
    assert _run(model="vit_x", image_size=32, mode="infer")["info"]["image_size"] == [32, 32]
    assert stub_timm[-1] == {"name": "vit_x", "pretrained": False, "img_size": 32}
    out = _run(model="resnet_like", image_size=24, mode="infer")
    assert out["status"] == "ok" and out["info"]["image_size"] == [24, 24]


def test_unknown_model_is_skipped_with_the_name(stub_timm: list[dict[str, Any]]) -> None:
    out = _run(model="unknown_net")
    assert out["status"] == "skipped" and "model='unknown_net'" in out["reason"]


def test_skip_reasons(monkeypatch: pytest.MonkeyPatch, stub_timm: list[dict[str, Any]]) -> None:
    v = Vision()
    assert "training mode" in (v.skip_reason(VisionParams(precision="trt-fp16"), H200) or "")
    assert "NVIDIA GPU" in (v.skip_reason(VisionParams(precision="trt-fp16", mode="infer"), CPU) or "")
    if importlib.util.find_spec("torch_tensorrt") is None:
        reason = v.skip_reason(VisionParams(precision="trt-fp16", mode="infer"), H200) or ""
        assert "pip install torch-tensorrt" in reason
    assert "CPU" in (v.skip_reason(VisionParams(precision="tf32"), CPU) or "")
    assert v.skip_reason(VisionParams(precision="tf32"), H200) is None
    monkeypatch.delitem(sys.modules, "timm")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert "pip install" in (v.skip_reason(VisionParams(), H200) or "")


def test_power_limit_without_a_gpu_is_a_clear_skip(stub_timm: list[dict[str, Any]]) -> None:
    out = _run(model="resnet_like", power_limit_w=300)
    assert out["status"] == "skipped" and "power_limit_w=300 needs an NVIDIA GPU" in out["reason"]


def test_bad_precision_names_the_choices() -> None:
    with pytest.raises(ValueError, match="amp-bf16"):
        VisionParams(precision="bf16")  # type: ignore[arg-type]
