"""Plain vLLM check of the `tp-vs-replicas` answer: Llama-3-8B (random weights) decoded by vLLM's offline
engine outside llmbench, as one engine over both GPUs (tensor parallel 2) and as two engines side by side
(one per GPU, their output rates summed), at equal total batch. Nothing of llmbench is imported.

    python3 benchmarks/plain_vllm_tp.py --out plain-vllm.json                 # TP2 at 1 and 32, replicas 2x16
    python3 benchmarks/plain_vllm_tp.py --layouts tp2 --batches 32            # one layout, one batch

Each engine: `vllm.LLM` on a config written here (`load_format="dummy"`, prompts as token ids, no
tokenizer), bf16, prefix caching off, compiled with CUDA graphs (vLLM's default). Each batch: one
warm-up `generate`, then --iters timed calls of `batch` prompts of --input-len random ids, each asked
for exactly --output-len tokens (`ignore_eos`). The figure is output tokens per second,
batch x output_len / wall time of the call (median of the calls): llmbench's `output_tokens_per_s`.
Replicas are two processes of this script (CUDA_VISIBLE_DEVICES 0 and 1) that start their engines, meet
at a file barrier, and time their calls at once; the node's figure is the sum of their medians.
NVLink multicast stays off: the machine's variables are kept, and a TP engine gets vLLM's own
multicast-off settings (the all-reduce fusion off, FlashInfer's trtllm backend, no symmetric memory)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1",
                 "VLLM_FLASHINFER_ALLREDUCE_BACKEND": "trtllm", "VLLM_ALLREDUCE_USE_SYMM_MEM": "0"}
LLAMA3_8B = {  # meta-llama/Meta-Llama-3-8B's config.json, the fields vLLM reads
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu",
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "bos_token_id": 128000, "eos_token_id": 128001,
}


def engine(tp: int, folder: str, quantization: str | None = None) -> Any:
    """vLLM's offline engine on the Llama-3-8B config, written into `folder`; `quantization` as vLLM's
    own ("fp8": the bf16 weights quantized once at load)."""
    import vllm

    (Path(folder) / "config.json").write_text(json.dumps(LLAMA3_8B))
    extra: dict[str, Any] = {"compilation_config": {"pass_config": {"fuse_allreduce_rms": False}}} if tp > 1 else {}
    return vllm.LLM(model=folder, skip_tokenizer_init=True, load_format="dummy", dtype="bfloat16",
                    quantization=quantization, tensor_parallel_size=tp, max_model_len=1024,
                    enable_prefix_caching=False, seed=0, **extra)


def timed_calls(llm: Any, batch: int, input_len: int, output_len: int, iters: int,
                barrier: tuple[Path, int, int] | None = None) -> dict[str, Any]:
    """One warm-up call, then `iters` timed calls (after the barrier where given): tok/s of each."""
    import random

    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    rng = random.Random(batch)
    prompts = [TokensPrompt(prompt_token_ids=[rng.randrange(1000, 120000) for _ in range(input_len)])
               for _ in range(batch)]
    sp = SamplingParams(max_tokens=output_len, min_tokens=output_len, ignore_eos=True, temperature=0.0,
                        detokenize=False)
    llm.generate(prompts, sp, use_tqdm=False)
    if barrier is not None:
        folder, me, peers = barrier
        (folder / f"ready-{batch}-{me}").touch()
        while sum(1 for p in folder.glob(f"ready-{batch}-*")) < peers:
            time.sleep(0.01)
    start = time.time()
    rates = []
    for _ in range(iters):
        t0 = time.perf_counter()
        outs = llm.generate(prompts, sp, use_tqdm=False)
        dt = time.perf_counter() - t0
        assert all(len(o.outputs[0].token_ids) == output_len for o in outs), "a request stopped early"
        rates.append(batch * output_len / dt)
    return {"batch": batch, "output_tokens_per_s": statistics.median(rates), "calls": rates,
            "window_unix": [start, time.time()]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layouts", default="tp2,replicas", help="tp2, replicas, one (one GPU), comma-separated")
    ap.add_argument("--batches", default="1,32", help="total batches (a replica runs half of each)")
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--replica", help=argparse.SUPPRESS)  # "ME:PEERS:BARRIER_DIR": one replica process
    a = ap.parse_args()
    for k, v in MULTICAST_OFF.items():
        os.environ.setdefault(k, v)
    batches = [int(b) for b in a.batches.split(",")]
    if a.replica:
        me, peers, folder = a.replica.split(":", 2)
        with tempfile.TemporaryDirectory() as d:
            llm = engine(1, d)
            res = [timed_calls(llm, b, a.input_len, a.output_len, a.iters, (Path(folder), int(me), int(peers)))
                   for b in batches]
        print("RESULT " + json.dumps(res), flush=True)
        return 0
    out: dict[str, Any] = {"model": "llama-3-8b (random weights)", "input_len": a.input_len,
                           "output_len": a.output_len, "iters": a.iters, "layouts": {}}
    for layout in a.layouts.split(","):
        t0 = time.time()
        if layout in ("tp2", "one"):
            with tempfile.TemporaryDirectory() as d:
                llm = engine(2 if layout == "tp2" else 1, d)
                start_s = time.time() - t0
                rows = [timed_calls(llm, b, a.input_len, a.output_len, a.iters) for b in batches]
                del llm
            out["layouts"][layout] = {"engine_start_s": start_s, "rows": rows}
        elif layout == "replicas":
            with tempfile.TemporaryDirectory() as barrier:
                halves = ",".join(str(max(b // 2, 1)) for b in batches)
                procs = [subprocess.Popen([sys.executable, __file__, "--batches", halves, "--input-len",
                                           str(a.input_len), "--output-len", str(a.output_len), "--iters",
                                           str(a.iters), "--replica", f"{i}:2:{barrier}"],
                                          env={**os.environ, "CUDA_VISIBLE_DEVICES": str(i)},
                                          stdout=subprocess.PIPE, text=True) for i in range(2)]
                each = []
                for p in procs:
                    stdout, _ = p.communicate()
                    if p.returncode:
                        raise SystemExit(f"a replica failed (exit {p.returncode})")
                    each.append(json.loads(next(ln for ln in stdout.splitlines() if ln.startswith("RESULT "))[7:]))
            rows = [{"batch_total": 2 * r0["batch"], "per_replica": [r0, r1],
                     "output_tokens_per_s": r0["output_tokens_per_s"] + r1["output_tokens_per_s"]}
                    for r0, r1 in zip(*each, strict=True)]
            out["layouts"]["replicas"] = {"rows": rows}
        else:
            raise SystemExit(f"unknown layout {layout!r}: tp2, replicas or one")
        for r in out["layouts"][layout]["rows"]:
            print(f"{layout:9s} batch {r.get('batch', r.get('batch_total'))!s:>3}: "
                  f"{r['output_tokens_per_s']:9.1f} output tok/s", flush=True)
    if a.out:
        a.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
