"""Numeric error of each weight precision on ONE linear layer (Llama-3-8B's MLP up-projection,
4096 -> 14336, init-like random weights), at decode (M=1) and prefill (M=128) shapes, through the
same apply_precision() the generate scenario uses. A whole random-weight model compounds these errors
over 32 layers; this isolates the kernel: a broken kernel shows here as an error near 1."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from report_out import emit
from torch import nn

from llmbench.engines.hf_quant import apply_precision
from llmbench.harness.worker import device_info
from llmbench.precision import unsupported_reason

PRECISIONS = ("fp16", "fp8", "fp8-wo", "int8", "int4", "nf4", "fp4", "llm-int8")


def check(precision: str, dev: str) -> dict[str, float]:
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Linear(4096, 14336, bias=False)).to(dev, torch.bfloat16)
    nn.init.normal_(layer[0].weight, std=0.02)
    xs = {m: torch.randn(m, 4096, device=dev, dtype=torch.bfloat16) for m in (1, 128)}
    with torch.no_grad():
        ref = {m: x.float() @ layer[0].weight.float().t() for m, x in xs.items()}
        q = apply_precision(layer, precision)
        out = {m: q(x.to(torch.float16) if precision in ("fp16", "llm-int8") else x).float() for m, x in xs.items()}
    return {f"rel_error_m{m}": float((out[m] - ref[m]).norm() / ref[m].norm()) for m in xs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    dev = device_info("auto")
    res: dict[str, object] = {"device": dev.name}
    for p in PRECISIONS:
        why = unsupported_reason(p, dev)
        try:
            res[p] = {"skipped": why} if why else check(p, dev.torch_device)
        except Exception as e:  # a report, not a test: keep going and say what failed
            res[p] = {"failed": f"{type(e).__name__}: {e}"[:300]}
    emit(res, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
