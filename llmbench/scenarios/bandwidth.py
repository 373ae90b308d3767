"""bandwidth: memory and transfer ceilings — device copy (TB/s, bytes read + written), host<->device
(GB/s, pinned and pageable), and a host memory copy that runs on any machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from llmbench.hardware import roofline
from llmbench.measure.timing import StopRule
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import SCENARIOS, CaseContext, Charts, Scenario, ScenarioParams
from llmbench.scenarios.reading import Reading

Kind = Literal["d2d", "h2d", "d2h", "host"]
GPU_KINDS = ("d2d", "h2d", "d2h")
HOST_KINDS = ("h2d", "d2h", "host")  # limited by PCIe or the host: nothing a GPU spec describes


class BandwidthParams(ScenarioParams):
    kind: Kind = "d2d"
    size_mib: int = Field(1024, ge=1, le=1 << 20)
    pinned: bool | None = None  # host memory page-locked: h2d/d2h only (default true there)

    @model_validator(mode="before")
    @classmethod
    def _pinned_only_for_transfers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        kind = data.get("kind", "d2d")
        if kind in ("h2d", "d2h"):
            return {**data, "pinned": data.get("pinned", True)}
        if data.get("pinned") is not None:
            raise ValueError(f"pinned applies only to kind h2d or d2h, not {kind!r}")
        return data


class BandwidthReading(Reading[BandwidthParams]):
    """Device copies scale with memory bandwidth; host transfers depend on PCIe and are not projected."""

    def projection_skip(self, params: BandwidthParams) -> str | None:
        if params.kind in HOST_KINDS:
            return ("host transfers and host memory copies depend on PCIe and the host, which the spec table "
                    "does not describe")
        return None


@SCENARIOS.register("bandwidth")
class Bandwidth(Scenario[BandwidthParams]):
    charts = Charts(sweep_axes=("size_mib",))
    Params = BandwidthParams
    headline = ("tb_per_s", "gb_per_s")
    reading = BandwidthReading({"*": "memory"})
    description = "Copy bandwidth: d2d (TB/s, read+write), h2d/d2h pinned or pageable (GB/s), host copy"

    def skip_reason(self, params: BandwidthParams, device: DeviceInfo) -> str | None:
        if params.kind in GPU_KINDS and not device.is_cuda:
            return f"{params.kind} copies need a CUDA GPU; this machine has none (running on {device.name})"
        return None

    def host_exclusive(self, params: BandwidthParams) -> str | None:
        """Host transfers and copies share PCIe and host memory with every case beside them."""
        return f"a {params.kind} copy loads PCIe and host memory" if params.kind in HOST_KINDS else None

    def estimate_s(self, params: BandwidthParams, rule: StopRule) -> float:
        return rule.min_seconds + 1.0 + params.size_mib / 1024

    def run(self, params: BandwidthParams, ctx: CaseContext) -> None:
        import torch

        n_bytes = params.size_mib * 2**20
        numel = n_bytes // 4
        cuda = torch.device(ctx.device.torch_device)
        on_host = {"d2d": (False, False), "h2d": (True, False), "d2h": (False, True), "host": (True, True)}
        src_host, dst_host = on_host[params.kind]
        pin = bool(params.pinned)
        src_dev = torch.device("cpu") if src_host else cuda
        gen = torch.Generator(device=src_dev).manual_seed(0)
        src = torch.rand(numel, generator=gen, dtype=torch.float32, device=src_dev)  # never zeros
        if src_host and pin:
            src = src.pin_memory()
        dst = torch.empty(numel, dtype=torch.float32, pin_memory=dst_host and pin, device="cpu" if dst_host else cuda)
        non_blocking = pin

        def fn() -> Any:
            return dst.copy_(src, non_blocking=non_blocking)

        fn()
        ctx.sync()
        if not torch.equal(dst[:4096].cpu(), src[:4096].cpu()):
            raise RuntimeError("copy check failed: destination differs from source")
        meas = ctx.measure(fn)
        if params.kind in ("d2d", "host"):
            moved, counted = 2 * n_bytes, "bytes read + written"
        else:
            moved, counted = n_bytes, "bytes across the link"
        if params.kind == "d2d":
            ctx.record("tb_per_s", [moved / t / 1e12 for t in meas.samples_s])
        else:
            ctx.record("gb_per_s", [moved / t / 1e9 for t in meas.samples_s])
        ctx.record_monitors(meas)
        ctx.info["bytes_counted_per_iter"] = moved
        ctx.code_path.update(call=f"Tensor.copy_(non_blocking={non_blocking})", counted=counted)
        if params.pinned is not None:
            ctx.code_path["pinned_host"] = pin


def measured_copy_tb_s(slug: str, results_dir: Path | None = None) -> roofline.Measured | None:
    """Device-copy bandwidth from the newest ceilings result set of the GPU `slug` in `results_dir`, or
    where `llmbench run --ceilings` (default: its --out) points the case (`roofline.ceilings_sources`):
    the best of its buffer sizes, the ceiling, with the set it came from. None when there is none."""
    return roofline.best_measured(slug, Bandwidth.name, "tb_per_s", {"kind": "d2d"}, results_dir)
