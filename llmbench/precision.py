"""The precision axis: each name, what it means, what it needs to run, and the numbers the roofline
and the projection need (bits per stored weight and per activation, the matrix units it computes on).

This is the one home of precision facts: roofline, projection, gemm and the engines read them here, so
a capability check ("fp8 needs compute capability >= 8.9; this GPU is 8.0 (A100)") or a peak lookup
is written once. Scenarios decide which names they accept; engines which they can apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llmbench.errors import choices_hint


@dataclass(frozen=True)
class Precision:
    name: str
    description: str
    min_cc: tuple[int, int] | None = None  # None: runs anywhere, CPU included
    needs_gpu: bool = False
    packages: tuple[str, ...] = field(default=())  # import names needed at run time
    install: str | None = None  # how to get the packages
    bits: float = 16.0  # bits per stored weight, for the roofline's bytes
    act_bits: int = 16  # activations, KV cache and unquantized weights (lm_head)
    compute: str = ""  # the dense peak (GpuSpec.tflops key) its matmuls run at; "" = its own name
    dtype: str = "bfloat16"  # torch dtype of the matmul operands (what a gemm of this precision multiplies)

    @property
    def peak_key(self) -> str:
        return self.compute or self.name

    @property
    def act_bytes(self) -> int:
        return self.act_bits // 8


_P = [
    Precision("fp32", "IEEE float32 everywhere (TF32 matrix units off)", bits=32, act_bits=32, dtype="float32"),
    Precision("tf32", "float32 storage, TF32 matrix units (Ampere+)", min_cc=(8, 0), needs_gpu=True, bits=32,
              act_bits=32, dtype="float32"),
    Precision("fp16", "IEEE float16 weights and activations", bits=16, dtype="float16"),
    Precision("bf16", "bfloat16 weights and activations", bits=16),
    Precision(
        "fp8",
        "float8 e4m3: dynamic per-row activation scaling + float8 weights (torchao; torch._scaled_mm for gemm)",
        min_cc=(8, 9), needs_gpu=True, packages=("torchao",), install="pip install torchao", bits=8,
        dtype="float8_e4m3fn",
    ),
    Precision(
        "fp8-wo", "float8 e4m3 weight-only, bf16 activations (torchao)",
        min_cc=(8, 9), needs_gpu=True, packages=("torchao",), install="pip install torchao", bits=8, compute="bf16",
    ),
    Precision(
        "int8", "int8 weight-only, bf16 activations (torchao)",
        packages=("torchao",), install="pip install torchao", bits=8, compute="bf16",
    ),
    Precision(
        "int4", "int4 weight-only, group size 128, bf16 activations (torchao)",
        min_cc=(8, 0), needs_gpu=True, packages=("torchao",), install="pip install torchao", bits=4.25, compute="bf16",
    ),
    Precision(
        "nf4", "4-bit NormalFloat weights, bf16 compute (bitsandbytes Linear4bit)",
        needs_gpu=True, packages=("bitsandbytes",), install="pip install bitsandbytes", bits=4.25, compute="bf16",
    ),
    Precision(
        "fp4", "4-bit float weights, bf16 compute (bitsandbytes Linear4bit)",
        needs_gpu=True, packages=("bitsandbytes",), install="pip install bitsandbytes", bits=4.25, compute="bf16",
    ),
    Precision(
        "llm-int8", "LLM.int8(): int8 weights with fp16 outlier decomposition (bitsandbytes)",
        needs_gpu=True, packages=("bitsandbytes",), install="pip install bitsandbytes", bits=8, compute="int8",
    ),
]

PRECISIONS: dict[str, Precision] = {p.name: p for p in _P}


def peak_of(name: str) -> str:
    """The dense peak (GpuSpec.tflops key) the matmuls of precision `name` run at: weight-only formats
    multiply in bf16; a name llmbench has no precision of is its own key."""
    return PRECISIONS[name].peak_key if name in PRECISIONS else name


def get(name: str) -> Precision:
    try:
        return PRECISIONS[name]
    except KeyError:
        raise KeyError(f"unknown precision {name!r}; {choices_hint(name, PRECISIONS)}") from None


def unsupported_reason(name: str, device: DeviceInfo) -> str | None:
    """Why `name` cannot run on `device` through llmbench's own path (device and packages), in words a
    person understands; None if it can."""
    why = device_reason(name, device)
    if why:
        return why
    for pkg in get(name).packages:
        if not _importable(pkg):
            return f"{name} needs the Python package {pkg!r}, which is not installed: {get(name).install}"
    return None


def device_reason(name: str, device: DeviceInfo) -> str | None:
    """Why the device cannot run `name` (no GPU, too old a GPU); None if it can."""
    p = get(name)
    if (p.needs_gpu or p.min_cc) and not device.is_cuda:
        need = f"compute capability >= {p.min_cc[0]}.{p.min_cc[1]}" if p.min_cc else "an NVIDIA GPU"
        return f"{name} needs {need}; this machine has no CUDA GPU (running on {device.name})"
    if p.min_cc and device.cc is not None and device.cc < p.min_cc:
        return (
            f"{name} needs compute capability >= {p.min_cc[0]}.{p.min_cc[1]}; "
            f"this GPU is {device.cc[0]}.{device.cc[1]} ({device.name})"
        )
    return None


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@dataclass(frozen=True)
class DeviceInfo:
    """What a case runs on, as the worker process sees it (after CUDA_VISIBLE_DEVICES)."""

    kind: str  # "cuda" or "cpu"
    name: str
    cc: tuple[int, int] | None = None
    memory_gib: float | None = None

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    @property
    def torch_device(self) -> str:
        return "cuda:0" if self.is_cuda else "cpu"
