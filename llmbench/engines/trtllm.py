"""TensorRT-LLM behind the engine interface: build a TensorRT engine of a preset (random weights) or a
checkpoint in bf16, fp16 or fp8 (TensorRT-LLM's recipe: fp8 weights, activations and KV cache), keep it
in an engine cache keyed by GPU model and version (a cached engine built on another GPU is refused), and
generate with request-level timing. Written from TensorRT-LLM's documentation (the LLM API,
`trtllm-bench`'s formats); not run here (its wheels pin their own torch): what runs without it is tested."""

from __future__ import annotations

import json
import os
import random
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmbench import precision as prec
from llmbench.engines.base import (
    ENGINES,
    Capability,
    Generation,
    GenerationSession,
    InferenceEngine,
    LoadOptions,
    ModelRef,
    RequestTiming,
)
from llmbench.errors import UserError
from llmbench.precision import DeviceInfo

if TYPE_CHECKING:
    from llmbench.models.shape import ModelShape

INSTALL = "pip install tensorrt-llm --extra-index-url https://pypi.nvidia.com (or: pip install 'llmbench[trtllm]')"
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8": "bfloat16"}
CACHE_ENV = "LLMBENCH_TRTLLM_CACHE"
RECORD = "llmbench-engine.json"  # written beside the engine: what built it, where, how long it took


def engine_cache_dir() -> Path:
    """Where built engines are kept: $LLMBENCH_TRTLLM_CACHE or ~/.cache/llmbench/trtllm."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "llmbench" / "trtllm")


def build_settings(options: LoadOptions, tensor_parallel: int = 1) -> dict[str, Any]:
    """The BuildConfig and quantization of an engine for a case: sized for the case (batch, prompt
    and sequence length), so a build is as small and quick as the case allows."""
    max_seq = options.size.max_model_len or 4096
    batch = options.size.max_batch or 1
    output = options.size.output_len or max_seq // 2
    build = {
        "max_batch_size": batch,
        "max_input_len": max(1, max_seq - output),
        "max_seq_len": max_seq,
        "max_num_tokens": max(batch * max_seq, 8192),
    }
    quant = {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"} if options.precision == "fp8" else {}
    return {"dtype": DTYPES[options.precision], "build_config": build, "quant": quant,
            "tensor_parallel_size": tensor_parallel}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


@dataclass(frozen=True)
class EngineKey:
    """What an engine is only valid for. Its directory name in the cache is made of all of it."""

    model: str
    precision: str
    gpu: str  # the GPU model's name as CUDA reports it
    trtllm_version: str
    batch: int
    max_seq_len: int
    tensor_parallel: int = 1

    def dirname(self) -> str:
        return "-".join([_slug(self.model), self.precision, _slug(self.gpu), f"trtllm{self.trtllm_version}",
                         f"b{self.batch}", f"s{self.max_seq_len}", f"tp{self.tensor_parallel}"])


def cached_engine(cache: Path, key: EngineKey) -> Path | None:
    """The engine directory of `key` if one was built; raises when the engine there was built for
    another GPU model or TensorRT-LLM version (engines are not portable), naming both."""
    path = cache / key.dirname()
    record_file = path / RECORD
    if not record_file.is_file():
        return None
    record = json.loads(record_file.read_text())
    for field in ("gpu", "trtllm_version", "precision", "model"):
        if record.get(field) != getattr(key, field):
            raise UserError(
                f"the TensorRT-LLM engine in {path} was built for {field} {record.get(field)!r}, not "
                f"{getattr(key, field)!r}: TensorRT engines run only on the GPU model and TensorRT-LLM version "
                f"that built them. Delete that directory (or set {CACHE_ENV} elsewhere) to build one here."
            )
    return path


def write_record(path: Path, key: EngineKey, build_s: float) -> dict[str, Any]:
    """Record what built the engine in `path`, its build time and its size on disk."""
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    record = {**asdict(key), "build_s": round(build_s, 3), "engine_bytes": size}
    (path / RECORD).write_text(json.dumps(record, indent=1))
    return record


# -- trtllm-bench -----------------------------------------------------------------------------------


def write_bench_dataset(path: Path, *, requests: int, input_len: int, output_len: int, vocab: int,
                        seed: int = 0) -> Path:
    """A `trtllm-bench --dataset` file of synthetic requests: one JSON object per line with
    task_id, input_ids (exactly input_len token ids) and output_tokens (the length to generate)."""
    rng = random.Random(seed)
    with path.open("w") as f:
        for i in range(requests):
            ids = [rng.randrange(vocab) for _ in range(input_len)]
            f.write(json.dumps({"task_id": i, "input_ids": ids, "output_tokens": output_len}) + "\n")
    return path


# trtllm-bench report (`--report_json`) keys -> llmbench metric names
_REPORT_METRICS = {
    ("performance", "avg_request_latency_ms"): "e2e_ms",
    ("performance", "system_output_throughput_tok_s"): "output_tokens_per_s",
    ("streaming_metrics", "avg_ttft_ms"): "ttft_ms",
    ("streaming_metrics", "avg_tpot_ms"): "tpot_ms",
}


def parse_bench_report(report: dict[str, Any]) -> tuple[dict[str, float], dict[str, Any]]:
    """llmbench metrics and facts from a trtllm-bench throughput report: averages of its requests
    (TTFT/TPOT only when it ran with --streaming). Raises on a report without performance figures."""
    if "performance" not in report:
        raise ValueError("not a trtllm-bench report: no 'performance' section")
    metrics = {
        name: float(report[section][key])
        for (section, key), name in _REPORT_METRICS.items()
        if report.get(section) and report[section].get(key) is not None
    }
    engine = report.get("engine", {})
    info = {
        "trtllm_version": engine.get("version"),
        "trtllm_quantization": engine.get("quantization"),
        "trtllm_kv_cache_dtype": engine.get("kv_cache_dtype"),
        "trtllm_requests": report.get("request_info", {}).get("num_requests"),
        "gpu": (report.get("machine") or {}).get("name"),
    }
    return metrics, {k: v for k, v in info.items() if v is not None}


# -- the engine -------------------------------------------------------------------------------------


@ENGINES.register("trtllm")
class TRTLLMEngine(InferenceEngine):
    description = ("NVIDIA TensorRT-LLM: builds a TensorRT engine per GPU model (cached), request-level "
                   "TTFT/E2E; written from its documentation, not yet run by llmbench")
    packages = ("tensorrt_llm",)
    install = INSTALL
    distributions = ("tensorrt-llm",)
    capabilities = frozenset({Capability.BUILD, Capability.REQUEST_METRICS})
    modes = ("compiled",)  # a TensorRT engine is compiled by construction
    precisions = frozenset(DTYPES)
    in_process = False  # its executor allocates GPU memory outside torch's counters of this process
    max_tensor_parallel = 8

    @classmethod
    def precision_reason(cls, precision: str, device: DeviceInfo) -> str | None:
        if not device.is_cuda:
            return f"TensorRT-LLM needs an NVIDIA GPU; running on {device.name}"
        return prec.device_reason(precision, device)

    def load(self, model: ModelRef, options: LoadOptions, device: DeviceInfo) -> TRTLLMSession:
        import tensorrt_llm

        try:  # from 1.0 `tensorrt_llm.LLM` is the PyTorch backend; the TensorRT-engine one moved here
            from tensorrt_llm._tensorrt_engine import LLM
        except ImportError:
            from tensorrt_llm import LLM
        from tensorrt_llm.llmapi import BuildConfig, QuantAlgo, QuantConfig

        tp = self.options.tensor_parallel
        settings = build_settings(options, tp)
        name = model.model or str(model.pretrained)
        key = EngineKey(name, options.precision, device.name, tensorrt_llm.__version__,
                        settings["build_config"]["max_batch_size"], settings["build_config"]["max_seq_len"],
                        tp)
        cache = engine_cache_dir()
        path = cached_engine(cache, key)
        if path is not None:
            llm = LLM(model=str(path))
            record = json.loads((path / RECORD).read_text())
            record["reused"] = True
            return TRTLLMSession(llm, model, record, settings)
        with tempfile.TemporaryDirectory(prefix="llmbench-trtllm-") as tmp:
            if model.model is not None:
                from llmbench.models.hf_dir import write_config_dir

                source = str(write_config_dir(model.model, tmp, tokenizer=False))
            else:
                source = str(model.pretrained)
            quant = settings["quant"]
            t0 = time.perf_counter()
            llm = LLM(
                model=source,
                dtype=settings["dtype"],
                tensor_parallel_size=tp,
                build_config=BuildConfig(**settings["build_config"]),
                quant_config=QuantConfig(quant_algo=QuantAlgo.FP8, kv_cache_quant_algo=QuantAlgo.FP8) if quant
                else QuantConfig(),
                load_format="auto" if model.weights == "pretrained" else "dummy",
                skip_tokenizer_init=True,
            )
            path = cache / key.dirname()
            path.mkdir(parents=True, exist_ok=True)
            llm.save(str(path))
            record = write_record(path, key, time.perf_counter() - t0)
        record["reused"] = False
        return TRTLLMSession(llm, model, record, settings)


class TRTLLMSession(GenerationSession):
    token_clock = "host"

    def __init__(self, llm: Any, model: ModelRef, record: dict[str, Any], settings: dict[str, Any]) -> None:
        self.llm = llm
        self.model = model
        self.record = record
        self.settings = settings
        self._params: Any = None
        self._output_len = 0

    @property
    def vocab_size(self) -> int:
        if self.model.model is not None:
            from llmbench.models.presets import get_preset

            return get_preset(self.model.model).vocab
        from llmbench.models.build import make_config

        return int(make_config(pretrained=self.model.pretrained).vocab_size)

    def shape(self) -> ModelShape:
        from llmbench.models.build import make_config, shape_of_config

        if self.model.model is not None:
            from llmbench.models.presets import get_preset

            return get_preset(self.model.model).shape()
        return shape_of_config(make_config(pretrained=self.model.pretrained))

    def max_positions(self) -> int | None:
        return int(self.settings["build_config"]["max_seq_len"])

    def prepare(self, output_len: int) -> None:
        from tensorrt_llm import SamplingParams

        self._output_len = output_len
        self._params = SamplingParams(max_tokens=output_len, min_tokens=output_len, ignore_eos=True,
                                      temperature=0.0, detokenize=False)

    def generate(self, ids: Any, on_token: Callable[[], None] | None = None, tokens: int | None = None) -> Generation:
        """Every row as a streamed request; each request's TTFT and E2E from when its first and its
        last output reach this process (seconds since the call began)."""
        import asyncio

        rows = ids.tolist() if hasattr(ids, "tolist") else [list(r) for r in ids]

        async def one(row: list[int], start: float) -> RequestTiming:
            first = None
            count = 0
            async for out in self.llm.generate_async(row, self._params, streaming=True):
                now = time.perf_counter()
                first = first if first is not None else now
                count = len(out.outputs[0].token_ids)
            end = time.perf_counter()
            return RequestTiming(ttft_s=(first or end) - start, e2e_s=end - start, output_tokens=count)

        async def batch() -> list[RequestTiming]:
            start = time.perf_counter()
            return list(await asyncio.gather(*(one(r, start) for r in rows)))

        requests = asyncio.run(batch())
        return Generation(tokens=self._output_len, requests=requests)

    def info(self) -> dict[str, Any]:
        return {"trtllm_engine": {k: v for k, v in self.record.items()}, "trtllm_build": self.settings}

    def close(self) -> None:
        shutdown = getattr(self.llm, "shutdown", None)
        if callable(shutdown):
            shutdown()
        self.llm = None
