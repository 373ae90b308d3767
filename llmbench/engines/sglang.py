"""SGLang's OpenAI-compatible server as a served engine (`python -m sglang.launch_server`), its command line
built from typed options as vLLM's is; at tensor parallelism NVLink multicast stays off. Its flags are
checked against the argument parser of SGLang 0.5.17 (the newest release that pins torch 2.11.0, the torch
of llmbench's GPU machines; docs/runbooks/gpu/sglang.sh runs it there), not yet run by llmbench: tested by
the command line it builds and a stand-in server. Options and precisions: docs/scenarios.md (serving engines)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from llmbench.engines.base import ENGINES, EngineOptions
from llmbench.engines.served import ServedEngine, ServeOptions, ServerSite, multicast_off
from llmbench.serving.server import ServerProcess

VERSION = "0.5.17"
INSTALL = f"pip install 'llmbench[sglang]' (sglang=={VERSION}, in an environment of its own: it pins its torch)"
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8": "bfloat16"}
MULTICAST_OFF_ENV = {"NCCL_NVLS_ENABLE": "0"}
MULTICAST_OFF_ARGS = ["--enforce-disable-flashinfer-allreduce-fusion"]
# /v1/models answers as soon as the HTTP server is up; /health answers 503 until SGLang's warm-up request
# has run (server status Starting), so only /health says the server is ready for the load
READY_PATHS = ("/health",)


class SGLangOptions(ServeOptions):
    """SGLang server settings a case may give in its [engine] table, beside its precision and GPUs."""

    context_length: int | None = Field(None, ge=1, description="longest prompt + output; None: the model's")
    mem_fraction_static: float | None = Field(None, gt=0, lt=1, description="share of GPU memory for weights "
                                              "and KV cache; None: SGLang's default")
    max_running_requests: int | None = Field(None, ge=1, description="requests in flight at most")
    prefix_caching: bool = Field(False, description="RadixAttention; off: every point sends the same prompts")
    kv_cache_dtype: Literal["auto", "fp8_e4m3", "fp8_e5m2"] = "auto"


def server_command(options: SGLangOptions, site: ServerSite) -> list[str]:
    """`python -m sglang.launch_server` for a case: the model (a preset's config dir with dummy weights,
    or a checkpoint), the offline tokenizer, the case's precision and GPUs, and the options given."""
    cmd = [site.python, "-m", "sglang.launch_server", "--model-path", site.model_dir or site.model,
           "--tokenizer-path", site.tokenizer_dir, "--load-format", "dummy" if site.model_dir else "auto",
           "--served-model-name", site.model, "--host", site.host, "--port", str(site.port),
           "--dtype", DTYPES[site.precision]]
    flags = {"--quantization": "fp8" if site.precision == "fp8" else None,
             "--tp-size": options.tensor_parallel if options.tensor_parallel > 1 else None,
             "--context-length": options.context_length, "--mem-fraction-static": options.mem_fraction_static,
             "--max-running-requests": options.max_running_requests,
             "--kv-cache-dtype": None if options.kv_cache_dtype == "auto" else options.kv_cache_dtype}
    cmd += [part for flag, value in flags.items() if value is not None for part in (flag, str(value))]
    # with the cache on, its counters on /metrics and each answer's cached_tokens (a point's prefix-cache figures)
    cmd += ["--enable-metrics", "--enable-cache-report"] if options.prefix_caching else ["--disable-radix-cache"]
    return cmd + (MULTICAST_OFF_ARGS if multicast_off(options.tensor_parallel) else [])


@ENGINES.register("sglang")
class SGLangEngine(ServedEngine):
    description = "SGLang's OpenAI server (RadixAttention off unless asked); written from its docs, not yet run"
    packages = ("sglang",)
    install = INSTALL
    distributions = ("sglang",)
    precisions = frozenset(DTYPES)
    ServedOptions: ClassVar[type[EngineOptions]] = SGLangOptions
    ready_paths = READY_PATHS
    options: SGLangOptions

    def command(self, site: ServerSite) -> list[str]:
        return server_command(self.options, site)

    def server(self, site: ServerSite, log: Path, env: dict[str, str] | None = None,
               detach: bool = False) -> ServerProcess:
        """The server's process, with NVLink multicast kept off at tensor_parallel > 1 (`multicast_off`)."""
        if multicast_off(self.options.tensor_parallel):
            env = {**(os.environ if env is None else env), **MULTICAST_OFF_ENV}  # env: the whole environment
        return super().server(site, log, env, detach)
