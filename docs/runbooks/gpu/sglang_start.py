"""One SGLang server start on a GPU, as the serving scenario lays it out for `sglang-llama3-8b`: the
preset's config folder (random weights, --load-format dummy) with the offline tokenizer, the command line
llmbench builds (context_length 4096, as the suite's), readiness on /health, one streamed completion, then
stop. Prints each step and the exact error of the one that fails (with the server log's tail); exits 1 then.
    python3 docs/runbooks/gpu/sglang_start.py OUT_DIR [bf16|fp8] [READY_TIMEOUT_S]
Run by sglang.sh, which sets up the path (SGLang's wheels first)."""

from __future__ import annotations

import json
import sys
import time
import traceback
import urllib.request
from pathlib import Path

from llmbench.engines.served import ServerSite
from llmbench.engines.sglang import SGLangEngine, SGLangOptions
from llmbench.models.hf_dir import write_config_dir
from llmbench.models.presets import get_preset
from llmbench.models.tokenizer import build_offline_tokenizer
from llmbench.serving.server import free_port, sigterm_as_interrupt

PRESET = "llama-3-8b"


def main(out: Path, precision: str, ready_timeout_s: float) -> int:
    work = out / f"sglang-{precision}"
    t0 = time.monotonic()
    step = "write the model folder"
    server = None
    try:
        tok = build_offline_tokenizer(work / "tokenizer", get_preset(PRESET).vocab)
        model = write_config_dir(PRESET, work / "model", tok)
        site = ServerSite(host="127.0.0.1", port=free_port(), model=PRESET, tokenizer_dir=str(tok),
                          model_dir=str(model), python=sys.executable, precision=precision)
        engine = SGLangEngine(SGLangOptions(name="sglang", context_length=4096))
        server = engine.server(site, out / f"sglang-server-{precision}.log")
        print("command:", " ".join(server.command), flush=True)
        step = "start the server"
        server.start()
        step = f"wait for /health (at most {ready_timeout_s:g} s)"
        ready = server.wait_ready(site.url, ready_timeout_s)
        print(f"ready after {ready:.1f} s", flush=True)
        step = "one streamed completion"
        body = {"model": PRESET, "prompt": "The quick brown fox", "max_tokens": 16, "temperature": 0,
                "stream": True, "ignore_eos": True}
        req = urllib.request.Request(site.url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        t_req = time.monotonic()
        chunks = []
        with urllib.request.urlopen(req, timeout=60) as r:
            for line in r:
                text = line.decode().strip()
                if text.startswith("data: ") and text != "data: [DONE]":
                    chunks.append(json.loads(text[6:])["choices"][0].get("text", ""))
        print(f"completion: {len(chunks)} chunks in {time.monotonic() - t_req:.2f} s, text {''.join(chunks)!r}",
              flush=True)
        if not chunks:
            raise RuntimeError("the completion streamed no text")
        step = "models list"
        with urllib.request.urlopen(site.url + "/v1/models", timeout=10) as r:
            print("models:", r.read().decode()[:300], flush=True)
        print(f"OK: SGLang {precision} started, answered and is being stopped ({time.monotonic() - t0:.0f} s)")
        return 0
    except BaseException as e:
        print(f"FAILED at '{step}' after {time.monotonic() - t0:.0f} s: {type(e).__name__}: {e}", flush=True)
        traceback.print_exc()
        if server is not None:
            print("--- server log tail ---\n" + server.log_tail(80), flush=True)
        return 1
    finally:
        if server is not None:
            print("server exit code:", server.stop(), flush=True)


if __name__ == "__main__":
    with sigterm_as_interrupt():  # `timeout` ending this script still stops the server (the finally above)
        rc = main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "bf16",
              float(sys.argv[3]) if len(sys.argv) > 3 else 170.0)
    sys.exit(rc)
