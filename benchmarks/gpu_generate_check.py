"""A quick check of the generate scenario's GPU paths on an H100/H200, in one run of a few minutes:
llama-3-8b random weights at batch 1 and tiny lengths, bf16 eager and compiled, fp8, int4, nf4
(--more adds fp8-wo, int8, fp16, llm-int8 and fp8/int4/nf4 compiled).

Each case runs in its own process through the real case worker (as `llmbench run` does), so GPU
memory is clean per case; the script prints a short table and keeps every case's JSON (with
tracebacks of failures) under --out. Figures from tiny lengths are for spotting bugs, not publishing.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

QUICK = [("bf16", "eager"), ("bf16", "compiled"), ("fp8", "eager"), ("int4", "eager"), ("nf4", "eager")]
MORE = [
    ("fp8-wo", "eager"),
    ("int8", "eager"),
    ("fp16", "eager"),
    ("llm-int8", "eager"),
    ("fp8", "compiled"),
    ("int4", "compiled"),
    ("nf4", "compiled"),
]
COLUMNS = (
    "compile_s",
    "ttft_ms",
    "tpot_ms",
    "decode_tokens_per_s",
    "roofline_efficiency",
    "peak_memory_gib",
    "logits_rel_error",
    "top1_agreement",
)


def run_one(params: dict[str, Any], settings: dict[str, Any], device: str, timeout_s: float, out: Path) -> dict:
    spec = {"scenario": "generate", "params": params, "settings": settings, "device": device}
    tag = f"{params['precision']}-{params['mode']}-bs{params['batch_size']}"
    spec_path, res_path = out / f"{tag}.spec.json", out / f"{tag}.json"
    spec_path.write_text(json.dumps(spec))
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            [sys.executable, "-m", "llmbench.harness.worker", "case", str(spec_path), str(res_path)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        tail = (p.stdout + p.stderr)[-3000:]
        code = p.returncode
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "reason": f"over {timeout_s:.0f}s", "wall_s": time.perf_counter() - t0}
    res = (
        json.loads(res_path.read_text())
        if res_path.exists()
        else {"status": "failed", "reason": f"worker exit code {code}", "traceback": tail}
    )
    res["wall_s"] = time.perf_counter() - t0
    res_path.write_text(json.dumps(res, indent=1, default=str))
    return res


def versions() -> str:
    out = []
    for pkg in ("torch", "transformers", "torchao", "bitsandbytes", "pydantic"):
        try:
            out.append(f"{pkg} {md.version(pkg)}")
        except md.PackageNotFoundError:
            out.append(f"{pkg} -")
    return ", ".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, help="folder for each case's JSON (default: a temporary folder)")
    ap.add_argument("--more", action="store_true", help="also the slower and rarer paths")
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--batch-size", type=int, default=1)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=16)
    ap.add_argument("--cpu", action="store_true", help="dry run of this script on the CPU (use --model tiny-llama)")
    ap.add_argument("--timeout", type=float, default=300.0, help="per case, seconds")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="gpu-generate-check-"))
    out.mkdir(parents=True, exist_ok=True)
    settings = {"warmup_iters": 1, "min_iters": 3, "min_seconds": 0.0}
    print(f"# {versions()}\n# results: {out}", flush=True)
    header = f"{'precision':9} {'mode':9} {'status':8} " + " ".join(f"{c[:12]:>12}" for c in COLUMNS) + "  wall_s"
    print(header, flush=True)
    rows = []
    for precision, mode in QUICK + (MORE if args.more else []):
        params = {
            "model": args.model,
            "precision": precision,
            "mode": mode,
            "batch_size": args.batch_size,
            "input_len": args.input_len,
            "output_len": args.output_len,
        }
        r = run_one(params, settings, "cpu" if args.cpu else "auto", args.timeout, out)
        m = r.get("metrics", {})
        cells = " ".join(f"{m[c]['value']:12.4g}" if c in m else f"{'-':>12}" for c in COLUMNS)
        print(f"{precision:9} {mode:9} {r['status']:8} {cells}  {r['wall_s']:6.1f}", flush=True)
        if r["status"] != "ok":
            print(f"    reason: {r.get('reason')}", flush=True)
        info = r.get("info", {})
        for key in ("cpu_ms_per_step", "gpu_busy_ms_per_step", "decode_step_bound_ms", "roofline_flag"):
            if key in info:
                print(f"    {key}: {info[key]}", flush=True)
        rows.append({"precision": precision, "mode": mode, **r})
    (out / "summary.json").write_text(json.dumps(rows, indent=1, default=str))
    return 0 if all(r["status"] in ("ok", "skipped") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
