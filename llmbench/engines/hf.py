"""Hugging Face transformers engine. Mode "eager": model.generate() with a dynamic KV cache, what a
plain transformers user gets. Mode "compiled": the same model with fused q/k/v and gate/up projections
(llmbench.engines.fuse; fused at load in every precision, unless the engine's option `fuse` is off),
a static KV cache and a greedy loop whose whole decode step (forward + argmax)
is one torch.compile'd call (CUDA graphs and tuned Triton kernels on a GPU), as gpt-fast does:
generate()'s per-step Python bookkeeping (logits processors, stopping criteria, several ms per token
on a 2026 Xeon) is what keeps a compiled forward from the memory-bandwidth roofline at batch 1.
torch/transformers load lazily."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, model_validator

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
    TrainingEngine,
    TrainingSession,
    TrainOptions,
)
from llmbench.errors import choices_hint
from llmbench.measure import compile_cache
from llmbench.precision import PRECISIONS, DeviceInfo

if TYPE_CHECKING:
    import torch

    from llmbench.models.shape import ModelShape

MODES = ("eager", "compiled")

# What the compiled mode asks of torch.compile on a GPU: CUDA graphs (mode="reduce-overhead"), and at
# batch 1 coordinate-descent tuning of inductor's Triton kernels, as gpt-fast does. With that option on
# and one row, inductor decomposes each matrix-vector product into a Triton reduction fused with the
# RMSNorm or SiLU around it (torch/_inductor/decomposition.py, `mm`), and tuning their block sizes
# speeds decode up for more compilation (docs/measurements.md, "Fused projections in compiled decode"). From
# batch 2 the matmuls stay with cuBLAS and tuning would touch only the small elementwise kernels. On a
# CPU: plain inductor (no graphs there).
GPU_COMPILE_OPTIONS: dict[str, Any] = {"triton.cudagraphs": True, "coordinate_descent_tuning": True}

# Precisions whose batched decode must not go through inductor's post-grad pattern matcher. torchao
# int8 weight-only computes linear(x, w.to(bf16)) * scale; from batch 2 (batch 1 decomposes the
# matmul first) inductor rewrites that into aten._weight_int8pack_mm, whose CUDA kernel is a plain
# fp32 one that takes nearly all of the step (docs/measurements.md, "Llama-3-8B decode on the H100";
# benchmarks/int8_woq_batch.py).
NO_PATTERN_MATCHER = frozenset({"int8"})


# Inductor settings that choose or tune the kernels a compile generates. A library may set them for the
# whole process: torchao's quantize_ does by default (set_inductor_config=True: coordinate-descent
# tuning in every direction, int_mm fused with its scale), so every compiled torchao case, at every
# batch size, tunes its Triton kernels whatever the compile options say. Those not at torch's default
# when the step is compiled go in the code path beside the options.
KERNEL_SETTINGS = (
    "coordinate_descent_tuning", "coordinate_descent_check_all_directions", "coordinate_descent_search_radius",
    "max_autotune", "max_autotune_gemm", "max_autotune_pointwise", "epilogue_fusion", "pattern_matcher",
    "force_fuse_int_mm_with_mul", "freezing", "triton.cudagraphs",
)


def inductor_settings_not_default() -> dict[str, Any]:
    """The KERNEL_SETTINGS whose values in this process differ from the defaults torch's config module
    took at import (a library's or the user's code set them)."""
    from torch._inductor import config

    values, entries = config.get_config_copy(), getattr(config, "_config", {})
    return {k: values[k] for k in KERNEL_SETTINGS
            if k in values and k in entries and values[k] != entries[k].default}


@contextlib.contextmanager
def kernel_settings_kept() -> Iterator[None]:
    """Undo, on leaving, what the code inside changed of the KERNEL_SETTINGS and of torch's float32
    matmul precision (torchao's set_inductor_config sets both for the whole process)."""
    import torch
    from torch._inductor import config

    values, matmul = config.get_config_copy(), torch.get_float32_matmul_precision()
    with config.patch({k: values[k] for k in KERNEL_SETTINGS if k in values}):  # puts them back on leaving
        try:
            yield
        finally:
            torch.set_float32_matmul_precision(matmul)


def gpu_compile_options(batch: int, precision: str = "bf16") -> dict[str, Any]:
    """torch.compile options of the compiled mode's decode step on a GPU, for a batch size and the
    precision the weights are stored in."""
    if batch == 1:
        return GPU_COMPILE_OPTIONS
    options: dict[str, Any] = {"triton.cudagraphs": True}
    if precision in NO_PATTERN_MATCHER:
        options["pattern_matcher"] = False
    return options


class HFOptions(InferenceOptions):
    """transformers' options: the mode, and whether the compiled mode fuses same-input projections (the
    fused and unfused layouts are two code paths of one case)."""

    added_later: ClassVar[frozenset[str]] = frozenset({"tensor_parallel", "fuse", "library_kernel_settings"})

    fuse: bool = Field(True, description="mode = 'compiled': q/k/v and gate/up as one matmul each; false "
                       "measures the unfused layout (what fusion is worth)")
    library_kernel_settings: bool = Field(
        True, description="true (the library's own default): the inductor settings a quantization library "
        "sets for the whole process stand (torchao's quantize_: coordinate-descent tuning in every direction, "
        "at every batch size); false: they are undone once it quantized, so the compile takes the mode's "
        "options alone, as bf16 does (what that tuning is worth, and costs in compilation)")

    @model_validator(mode="after")
    def _fuse_when_compiled(self) -> HFOptions:
        if not self.fuse and self.mode != "compiled":
            raise ValueError("fuse = false applies to mode = 'compiled' only (eager never fuses)")
        return self


@ENGINES.register("hf")
class HFEngine(InferenceEngine, TrainingEngine):
    description = "Hugging Face transformers generate(): eager (dynamic cache) or compiled (static cache)"
    packages = ("transformers", "accelerate")
    install = "pip install 'llmbench[hf]'"
    modes = MODES
    capabilities = frozenset({
        Capability.TOKEN_TIMESTAMPS, Capability.LOGITS, Capability.CONVERT, Capability.PARTIAL_GENERATE,
    })
    precisions = frozenset(PRECISIONS)  # every precision of the axis, through torchao and bitsandbytes
    Options: ClassVar[type[EngineOptions]] = HFOptions
    options: HFOptions

    def load(self, model: ModelRef, options: LoadOptions, device: DeviceInfo) -> HFSession:
        """Build the model in bf16 on the device (the reference precision), then convert it to
        options.precision; a scenario that wants reference logits loads bf16 and converts itself."""
        from llmbench.models.build import build_model

        built = build_model(model=model.model, pretrained=model.pretrained, weights=model.weights,
                            device=device.torch_device, seed=model.seed)
        session = HFSession(built, self.options.mode, fuse=self.options.fuse,
                            library_kernel_settings=self.options.library_kernel_settings)
        if options.precision != "bf16":
            session.convert(options.precision)
        return session

    def session_key(self, model: ModelRef, options: LoadOptions, device: DeviceInfo) -> str | None:
        """Eager sessions serve any batch and length (generate() with a dynamic cache): the model and
        its precision are the session. A compiled session is not shared: its compile options and
        graphs follow the first batch it runs (gpu_compile_options), and a second batch size in one
        process would make torch.compile recompile with a dynamic batch, another code path."""
        if self.options.mode != "eager":
            return None
        import json

        return json.dumps({"model": [model.model, model.pretrained, model.weights, model.seed],
                           "precision": options.precision, "mode": self.options.mode}, sort_keys=True)

    def load_for_training(self, model: ModelRef, options: TrainOptions, device: DeviceInfo) -> TrainingSession:
        """A training session: full, LoRA or QLoRA fine-tuning, optionally in fp8 (llmbench.engines.hf_train)."""
        from llmbench.engines.hf_train import load_for_training

        return load_for_training(model, options, device)


@functools.cache
def _token_hook_class() -> type:
    from transformers import LogitsProcessor

    class TokenHook(LogitsProcessor):
        """Called once per generated token, right after that token's logits are computed: the place
        to record a timestamp without synchronising the GPU."""

        def __init__(self, on_token: Callable[[], None]) -> None:
            self.on_token = on_token

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            self.on_token()
            return scores

    return TokenHook


class HFSession(GenerationSession):
    """One loaded model and how to run it: logits for accuracy checks, precision conversion, and
    generate() forced to exactly `output_len` new tokens."""

    def __init__(
        self, model: Any, mode: str = "eager", fuse: bool = True, library_kernel_settings: bool = True
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; {choices_hint(mode, MODES)}")
        self.model = model
        self.device = model.device
        self._gen_config: Any = None
        self._output_len = 0
        self._static: StaticGreedy | None = None
        self.mode = mode
        self.precision = "bf16"  # how the weights are stored: apply_precision changes it
        self.library_kernel_settings = library_kernel_settings  # False: convert() undoes a quantizer's
        # process-wide inductor settings
        # The compiled mode's layout is set here, once, whatever the precision: fusing only inside
        # convert() left bf16 (never converted) unfused while the docs said compiled mode fuses.
        # Fusion keeps each output's dot product, so bf16 reference logits are those of the same function.
        self.fused_groups = 0
        if mode == "compiled" and fuse:
            from llmbench.engines.fuse import fuse_projections

            self.fused_groups = fuse_projections(self.model)

    @property
    def vocab_size(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])

    def shape(self) -> ModelShape:
        from llmbench.models.build import shape_of

        return shape_of(self.model)

    def max_positions(self) -> int | None:
        from llmbench.models.build import max_positions

        return max_positions(self.model)

    def logits(self, ids: torch.Tensor) -> torch.Tensor:
        """Full-sequence logits of one forward pass (no cache)."""
        import torch

        with torch.inference_mode():
            return self.model(input_ids=ids, use_cache=False).logits

    def token_logprobs(self, seqs: list[list[int]]) -> list[list[float]]:
        """Log-probabilities of each sequence's tokens from one forward pass of this model (right padded
        batches: causal attention keeps the padding out of every real position)."""
        import torch

        lens = [len(s) for s in seqs]
        width = max(lens)
        ids = torch.tensor([s + [0] * (width - len(s)) for s in seqs], device=self.device)
        mask = torch.tensor([[1] * n + [0] * (width - n) for n in lens], device=self.device)
        with torch.inference_mode():
            logp = torch.log_softmax(self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits.float(), -1)
            picked = logp[:, :-1].gather(-1, ids[:, 1:, None])[..., 0].cpu()
        return [picked[i, : n - 1].tolist() for i, n in enumerate(lens)]

    def greedy_tokens(self, prompts: list[list[int]], n: int) -> list[list[int]]:
        """transformers generate(), greedy, on this model (the compiled mode's model too, called eagerly)."""
        import torch

        out = []
        with torch.inference_mode():
            for p in prompts:
                ids = torch.tensor([p], device=self.device)
                gen = self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                          max_new_tokens=n, min_new_tokens=n, num_beams=1,
                                          pad_token_id=getattr(self.model.config, "eos_token_id", None) or 0)
                out.append(gen[0, len(p):].tolist())
        return out

    def convert(self, precision: str) -> None:
        """Convert the bf16 weights to `precision` in the layout the session was loaded with (compiled:
        q/k/v and gate/up already fused, so quantizers see the fused layers). With the engine's option
        library_kernel_settings off, the quantizer's process-wide inductor settings are undone after."""
        from llmbench.engines.hf_quant import apply_precision

        with contextlib.nullcontext() if self.library_kernel_settings else kernel_settings_kept():
            self.model = apply_precision(self.model, precision)
        self.precision = precision

    @property
    def library_settings_undone(self) -> bool:
        """Whether convert() undid a quantizer's process-wide inductor settings (the option, once converted)."""
        return not self.library_kernel_settings and self.precision != "bf16"

    def prepare(self, output_len: int) -> None:
        """Generation settings: greedy, exactly output_len new tokens (EOS masked until then)."""
        from transformers import GenerationConfig

        cfg = self.model.config
        eos = getattr(cfg, "eos_token_id", None)
        pad = getattr(cfg, "pad_token_id", None)
        if pad is None:
            pad = (eos[0] if isinstance(eos, list) else eos) or 0
        kw: dict[str, Any] = {
            "max_new_tokens": output_len,
            "min_new_tokens": output_len,
            "do_sample": False,
            "num_beams": 1,
            "use_cache": True,
            "eos_token_id": eos,
            "pad_token_id": pad,
        }
        kw["disable_compile"] = True
        self._gen_config = GenerationConfig(**kw)
        self._output_len = output_len
        compiled = self.mode == "compiled"
        self._static = StaticGreedy(self.model, output_len, precision=self.precision) if compiled else None

    def generate(
        self, ids: torch.Tensor, on_token: Callable[[], None] | None = None, tokens: int | None = None
    ) -> Generation:
        """One generate() of the batch; its new tokens per sequence must be output_len (or `tokens`,
        for a shorter diagnostic run with the same prepared settings)."""
        import copy

        import torch

        if self._gen_config is None:
            raise RuntimeError("call prepare() before generate()")
        from transformers import LogitsProcessorList

        want = self._output_len if tokens is None else min(tokens, self._output_len)
        if self._static is not None:
            return Generation(self._static.run(ids, want, on_token))
        cfg = self._gen_config
        if want != self._output_len:
            cfg = copy.deepcopy(cfg)
            cfg.max_new_tokens = cfg.min_new_tokens = want
        hooks = LogitsProcessorList([_token_hook_class()(on_token)] if on_token else [])
        out = self.model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            generation_config=cfg,
            logits_processor=hooks,
        )
        n = int(out.shape[1] - ids.shape[1])
        if n != want:
            raise RuntimeError(f"the engine generated {n} tokens per sequence; {want} were requested")
        return Generation(n)

    def compiled(self) -> bool:
        """Whether the decode step really went through torch.compile."""
        return self._static is not None and self._static.compiled_steps > 0

    def info(self) -> dict[str, Any]:
        """The compiled mode's torch.compile options and how many projection groups it fused."""
        out: dict[str, Any] = {}
        if self._static is not None and self._static.compile_options is not None:
            out["compile_options"] = self._static.compile_options
        if self.fused_groups:
            out["fused_projection_groups"] = self.fused_groups
        return out

    def code_path(self) -> dict[str, Any]:
        """Decode loop, KV cache, layer layout, attention, quantization and compilation of this session."""
        from llmbench.engines.hf_quant import METHOD

        compiled = self._static is not None
        path: dict[str, Any] = {
            "engine": "hf",
            "mode": self.mode,
            "decode_loop": "one torch.compile'd greedy step per token" if compiled else "transformers generate()",
            "kv_cache": "static" if compiled else "dynamic",
            "fused_projection_groups": self.fused_groups,
            "attention": str(getattr(self.model.config, "_attn_implementation", None)),
            "weights": METHOD.get(self.precision, self.precision),
        }
        if self.precision != "bf16":
            path["quantized"] = "in this process, from the bf16 weights on the device"
        if compiled and self._static is not None:
            path["compile"] = {"backend": "inductor", "options": dict(self._static.compile_options or {})}
            if self._static.process_settings:  # set for the whole process (torchao's quantize_): the options win
                path["compile"]["process_settings"] = self._static.process_settings
            if self.library_settings_undone:
                path["compile"]["library_settings"] = "undone after quantizing (library_kernel_settings = false)"
            if self._static.environment:  # TORCHINDUCTOR_* settings: torch's defaults in this process
                path["compile"]["environment"] = self._static.environment
        return path

    def verify(self) -> None:
        if self.mode == "compiled" and not self.compiled():
            raise RuntimeError("mode=compiled, but the engine did not compile the forward pass")


class StaticGreedy:
    """Greedy decoding on a StaticCache: an eager prefill (like generate()), then one compiled call per
    token that runs the forward and the argmax; EOS is never checked, so the length is exact.

    Positions live on the device (no host-to-device copy, which would synchronise, inside the loop);
    each step's token is copied out of the CUDA graph's output buffer before the next replay."""

    def __init__(
        self, model: Any, max_new: int, compile_options: dict[str, Any] | None = None, precision: str = "bf16"
    ) -> None:
        self.model = model
        self.precision = precision  # with the batch size, picks the compile options (gpu_compile_options)
        self.max_new = max_new  # the cache holds this many new tokens: shorter runs reuse cache and graphs
        self.on_gpu = model.device.type == "cuda"
        self._cache: Any = None
        self._cache_key: tuple[int, int] | None = None
        self.compiled_steps = 0
        self.last_tokens: Any = None  # the ids of the last run, for checks against generate()
        self.compile_options = compile_options  # None: chosen by the first run's batch size
        self.process_settings: dict[str, Any] = {}  # inductor settings not at default when it compiled
        self.environment: dict[str, str] = {}  # the TORCHINDUCTOR_* variables it compiled under
        self._step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None

    def _compiled_step(self, batch: int) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        import torch

        if self._step is None:
            if self.compile_options is None:
                self.compile_options = gpu_compile_options(batch, self.precision) if self.on_gpu else {}
            self.process_settings = inductor_settings_not_default()
            self.environment = compile_cache.inductor_environment()
            self._step = torch.compile(self._decode_step, options=self.compile_options)
        return self._step

    def _decode_step(self, tok: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=tok, cache_position=pos, past_key_values=self._cache, use_cache=True)
        return out.logits[:, -1].argmax(-1, keepdim=True)

    def _cache_for(self, batch: int, length: int) -> Any:
        from transformers import StaticCache

        if self._cache_key != (batch, length):  # one cache (and one set of graphs) per shape
            self._cache = StaticCache(config=self.model.config, max_cache_len=length)
            self._cache_key = (batch, length)
        else:
            self._cache.reset()
        return self._cache

    def run(self, ids: torch.Tensor, n: int, on_token: Callable[[], None] | None = None) -> int:
        import torch

        batch, length = ids.shape
        if n > self.max_new:
            raise ValueError(f"{n} new tokens requested; the static cache was prepared for {self.max_new}")
        cache = self._cache_for(batch, length + self.max_new)
        step = self._compiled_step(batch)
        dev = ids.device
        # sized for the prepared capacity, not this run: the step's input is a view of it, and a view
        # with other strides would make torch.compile build (and capture) the graph again
        out = torch.empty(batch, self.max_new, dtype=torch.long, device=dev)
        positions = torch.arange(length, length + self.max_new, device=dev)
        with torch.no_grad():
            prefill_pos = torch.arange(length, device=dev)
            logits = self.model(
                input_ids=ids, cache_position=prefill_pos, past_key_values=cache, use_cache=True, logits_to_keep=1
            ).logits
            tok = logits[:, -1].argmax(-1, keepdim=True)
            out[:, 0] = tok[:, 0]
            if on_token:
                on_token()
            for i in range(1, n):
                if self.on_gpu:
                    torch.compiler.cudagraph_mark_step_begin()
                # the input is our own copy of the last token, never the graph's output buffer
                tok = step(out[:, i - 1 : i], positions[i - 1 : i])
                out[:, i] = tok[:, 0]
                if on_token:
                    on_token()
                self.compiled_steps += 1
        self.last_tokens = out[:, :n]
        return n
