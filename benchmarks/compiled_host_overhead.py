"""Is a compiled decode step of a torchao-quantized model host-bound, and is it dynamo's guard
evaluation? The generate scenario's compiled mode (HFSession), timed per token with CUDA events and
CPU time per step, with guards evaluated (default) and skipped (skip_guard_eval_unsafe), then a
cProfile of one generate() to show where the host time goes.

    python benchmarks/compiled_host_overhead.py int4 > compiled-host-overhead-int4.log
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

import torch

from llmbench.engines.hf import HFSession
from llmbench.models.build import build_model, synthetic_ids
from llmbench.scenarios.generate import TokenClock, token_metrics


def main(prec: str) -> None:
    s = HFSession(build_model(model="llama-3-8b", device="cuda"), "compiled")
    s.convert(prec)
    s.prepare(128)
    ids = synthetic_ids(s.vocab_size, 1, 128, "cuda", 0)
    t = time.perf_counter()
    s.generate(ids)
    torch.cuda.synchronize()
    print(prec, "compile", round(time.perf_counter() - t, 1), flush=True)
    static = s._static
    assert static is not None
    ref = static.last_tokens.clone()

    def timed(label: str) -> None:
        clock = TokenClock(cuda=True)
        cpu = []
        for _ in range(4):
            c0 = time.thread_time()
            clock.begin()
            s.generate(ids, on_token=clock.stamp)
            clock.end()
            cpu.append(time.thread_time() - c0)
        tm = [token_metrics(r[0], r[1:-1], r[-1], batch=1, input_len=128) for r in clock.seconds(4)]
        same = torch.equal(static.last_tokens, ref)
        print(
            label,
            "tok/s", [round(x.decode_tokens_per_s, 1) for x in tm],
            "cpu ms/step", [round(c / 128 * 1e3, 2) for c in cpu],
            "same tokens", same,
            flush=True,
        )

    timed("default")
    with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
        timed("skip_guard_eval_unsafe")
    timed("default again")
    pr = cProfile.Profile()
    pr.enable()
    s.generate(ids)
    torch.cuda.synchronize()
    pr.disable()
    st = io.StringIO()
    pstats.Stats(pr, stream=st).sort_stats("tottime").print_stats(14)
    print(st.getvalue()[-3000:])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "int4")
