"""vision: image-model training and inference throughput (timm, random weights, synthetic images) per
precision, memory format and compilation; with NVML, power and energy per sample. The seed's power-limit
study (ViT-B/16 train batch 160, inference batch 2048) runs this with a `power_limit_w` axis."""

from __future__ import annotations

import importlib.util
import time
from typing import Any, Literal

from pydantic import Field

from llmbench.measure.timing import StopRule
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import (
    SCENARIOS,
    CaseContext,
    Charts,
    Scenario,
    ScenarioParams,
    Skip,
    WorkerSettings,
)
from llmbench.scenarios.reading import Reading

# amp-*: torch.autocast over an fp32 model; fp16: the whole model and its inputs .half(); trt-fp16:
# a TensorRT engine built by torch-tensorrt with fp16 kernels enabled (inference only)
VisionPrecision = Literal["fp32", "tf32", "amp-fp16", "amp-bf16", "fp16", "trt-fp16"]
PEAK_KEY = {"fp32": "fp32", "tf32": "tf32", "amp-fp16": "fp16", "amp-bf16": "bf16", "fp16": "fp16",
            "trt-fp16": "fp16"}
TIMM_INSTALL = "pip install 'llmbench[vision]'  (or: pip install timm)"
TRT_INSTALL = "pip install torch-tensorrt"


class VisionParams(ScenarioParams):
    model: str = "vit_base_patch16_224"  # any timm model name (timm.create_model, pretrained=False)
    mode: Literal["train", "infer"] = "train"
    batch: int = Field(160, ge=1)
    precision: VisionPrecision = "fp32"
    channels_last: bool = False
    compile: bool = False  # torch.compile; its time goes to compile_s, out of the timed window
    image_size: int | None = Field(None, ge=8)  # None: the model's own input size
    num_classes: int = Field(1000, ge=1)
    power_limit_w: float | None = Field(None, gt=0)  # opt-in: needs root; the worker sets and restores it


class VisionReading(Reading[VisionParams]):
    """Its matrix math runs at the peak its precision maps to (autocast and TensorRT fp16 included)."""

    def compute_precision(self, params: VisionParams) -> str:
        return PEAK_KEY.get(str(params.precision), "fp32")


@SCENARIOS.register("vision")
class Vision(Scenario[VisionParams]):
    charts = Charts(power_limit_param="power_limit_w")
    Params = VisionParams
    headline = ("train_samples_per_s", "infer_samples_per_s", "samples_per_j")
    reading = VisionReading({"*": "compute"})

    def worker_settings(self, params: VisionParams) -> WorkerSettings:
        return WorkerSettings(power_limit_w=params.power_limit_w)  # opt-in axis: needs root
    description = "timm image model training/inference samples/s per precision (random weights, synthetic images)"

    def skip_reason(self, params: VisionParams, device: DeviceInfo) -> str | None:
        for mod in ("timm", "torchvision"):  # timm imports torchvision
            if importlib.util.find_spec(mod) is None:
                return f"{mod} is not installed: {TIMM_INSTALL}"
        if params.precision == "trt-fp16":
            if params.mode == "train":
                return "TensorRT builds inference engines only: trt-fp16 has no training mode"
            if not device.is_cuda:
                return "TensorRT needs an NVIDIA GPU"
            if importlib.util.find_spec("torch_tensorrt") is None:
                return f"torch-tensorrt is not installed: {TRT_INSTALL}"
        if params.precision == "tf32" and not device.is_cuda:
            return "TF32 is an NVIDIA tensor-core mode: there is none on the CPU (fp32 is the CPU's figure)"
        if params.precision == "tf32" and device.cc is not None and device.cc < (8, 0):
            return f"TF32 needs compute capability >= 8.0 (Ampere); this GPU is {device.cc[0]}.{device.cc[1]}"
        if params.precision == "amp-bf16" and device.is_cuda and device.cc is not None and device.cc < (8, 0):
            return f"bf16 needs compute capability >= 8.0 (Ampere); this GPU is {device.cc[0]}.{device.cc[1]}"
        return None

    def estimate_s(self, params: VisionParams, rule: StopRule) -> float:
        return rule.min_seconds + (60.0 if params.compile or params.precision == "trt-fp16" else 10.0)

    def run(self, params: VisionParams, ctx: CaseContext) -> None:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = params.precision == "tf32"
        torch.backends.cudnn.allow_tf32 = params.precision == "tf32"
        torch.manual_seed(0)
        ctx.progress(0.0, f"building {params.model}")
        model, x, y = _build(params, ctx.device.torch_device)
        ctx.info["image_size"] = list(x.shape[-2:])
        ctx.info["params_m"] = round(sum(p.numel() for p in model.parameters()) / 1e6, 2)
        ctx.info["data"] = "one synthetic batch made on the device before timing (no data loading)"
        if params.mode == "train":
            fn = _train_step(model, x, y, params, ctx.device)
            ctx.info["optimizer"] = "SGD momentum 0.9 (lr 1e-3); amp-fp16 with a GradScaler"
        else:
            fn = _infer_step(model, x, params, ctx.device)
        if params.compile or params.precision == "trt-fp16":
            t0 = time.perf_counter()
            fn()
            ctx.sync()
            ctx.record_value("compile_s", time.perf_counter() - t0)
        ctx.reset_peak_memory()
        meas = ctx.measure(fn)
        b = params.batch
        ctx.record("step_ms" if params.mode == "train" else "time_ms", [s * 1e3 for s in meas.samples_s])
        ctx.record(f"{params.mode}_samples_per_s", [b / s for s in meas.samples_s])
        ctx.record_monitors(meas, units_per_iter=b, energy_metric="energy_j_per_sample")
        per = ctx.metrics.get("energy_j_per_sample")
        if per is not None and per.value:
            ctx.record_value("samples_per_j", 1.0 / per.value, per.flags)


def _build(params: VisionParams, dev: str) -> tuple[Any, Any, Any]:
    """The model (random weights) in the case's precision and memory format, and one batch of images."""
    import torch

    try:
        import timm
    except ImportError as e:  # e.g. a torchvision built for another torch
        raise Skip(f"timm does not import here ({e}): {TIMM_INSTALL}, with a torchvision matching torch") from e
    kwargs: dict[str, Any] = {"img_size": params.image_size} if params.image_size else {}
    try:
        with torch.device(dev):  # random weights made on the device, not on the CPU first
            try:
                model = timm.create_model(params.model, pretrained=False, num_classes=params.num_classes, **kwargs)
            except TypeError:  # conv nets take any image size and have no img_size argument
                model = timm.create_model(params.model, pretrained=False, num_classes=params.num_classes)
    except RuntimeError as e:  # timm: "Unknown model (...)"
        raise Skip(f"model={params.model!r}: {e}; `timm.list_models()` lists the valid names") from e
    size = params.image_size or int(model.pretrained_cfg.get("input_size", (3, 224, 224))[-1])
    model = model.to(dev)
    dtype = torch.float16 if params.precision == "fp16" else torch.float32
    fmt = torch.channels_last if params.channels_last else torch.contiguous_format
    model = model.to(dtype=dtype, memory_format=fmt)
    gen = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(params.batch, 3, size, size, device=dev, dtype=dtype, generator=gen).contiguous(memory_format=fmt)
    y = torch.randint(0, params.num_classes, (params.batch,), device=dev, generator=gen)
    return model, x, y


def _autocast(params: VisionParams, device: DeviceInfo) -> Any:
    import contextlib

    import torch

    if params.precision in ("amp-fp16", "amp-bf16"):
        dtype = torch.float16 if params.precision == "amp-fp16" else torch.bfloat16
        return torch.autocast(device_type=device.kind, dtype=dtype)
    return contextlib.nullcontext()


def _train_step(model: Any, x: Any, y: Any, params: VisionParams, device: DeviceInfo) -> Any:
    import torch

    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    scaler = torch.amp.GradScaler(device.kind, enabled=params.precision == "amp-fp16")
    loss_fn = torch.nn.CrossEntropyLoss()
    fwd = torch.compile(model) if params.compile else model

    def step() -> Any:
        opt.zero_grad(set_to_none=True)
        with _autocast(params, device):
            loss = loss_fn(fwd(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    return step


def _infer_step(model: Any, x: Any, params: VisionParams, device: DeviceInfo) -> Any:
    import torch

    model.eval()
    if params.precision == "trt-fp16":
        import torch_tensorrt

        fwd = torch_tensorrt.compile(model, ir="dynamo", inputs=[x], enabled_precisions={torch.float16})
    else:
        fwd = torch.compile(model) if params.compile else model

    def step() -> Any:
        with torch.inference_mode(), _autocast(params, device):
            return fwd(x)

    return step
