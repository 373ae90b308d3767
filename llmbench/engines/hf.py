"""Hugging Face transformers engine: model.generate() with a dynamic KV cache (mode "eager") or a
static cache with the decode forward compiled by torch.compile (mode "compiled", transformers'
CompileConfig: CUDA graphs via mode="reduce-overhead" on a GPU). torch/transformers load lazily."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llmbench.engines.base import ENGINES, Engine

if TYPE_CHECKING:
    import torch

    from llmbench.hardware.roofline import ModelShape

MODES = ("eager", "compiled")


@ENGINES.register("hf")
class HFEngine(Engine):
    description = "Hugging Face transformers generate(): eager (dynamic cache) or compiled (static cache)"
    packages = ("transformers", "accelerate")
    install = "pip install 'llmbench[hf]'"
    modes = MODES

    def load(self, *, model: str | None, pretrained: str | None, weights: str, device: str, seed: int = 0) -> HFSession:
        """Build the model in bf16 on `device` (the reference precision; apply_precision converts)."""
        from llmbench.models.build import build_model

        return HFSession(build_model(model=model, pretrained=pretrained, weights=weights, device=device, seed=seed))


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


class HFSession:
    """One loaded model and how to run it: logits for accuracy checks, precision conversion, and
    generate() forced to exactly `output_len` new tokens."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.device = model.device
        self._gen_config: Any = None
        self._output_len = 0
        self.mode = "eager"

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

    def apply_precision(self, precision: str) -> None:
        from llmbench.engines.hf_quant import apply_precision

        self.model = apply_precision(self.model, precision)

    def prepare(self, output_len: int, mode: str) -> None:
        """Generation settings: greedy, exactly output_len new tokens (EOS masked until then)."""
        from transformers import GenerationConfig

        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
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
        if mode == "compiled":
            kw["cache_implementation"] = "static"
            kw["compile_config"] = self._compile_config()
        else:
            kw["disable_compile"] = True
        self._gen_config = GenerationConfig(**kw)
        self._output_len = output_len
        self.mode = mode

    def _compile_config(self) -> Any:
        from transformers import CompileConfig

        on_gpu = self.device.type == "cuda"
        # CUDA graphs on a GPU; plain inductor elsewhere (transformers compiles off-GPU only on request).
        cc = CompileConfig(fullgraph=False, mode="reduce-overhead" if on_gpu else "default")
        if not on_gpu:
            cc._compile_all_devices = True  # type: ignore[assignment]
        return cc

    def generate(
        self, ids: torch.Tensor, on_token: Callable[[], None] | None = None, tokens: int | None = None
    ) -> int:
        """One generate() of the batch; returns the number of new tokens, which must be output_len
        (or `tokens`, for a shorter diagnostic run with the same prepared settings)."""
        import copy

        import torch

        if self._gen_config is None:
            raise RuntimeError("call prepare() before generate()")
        from transformers import LogitsProcessorList

        want = self._output_len if tokens is None else min(tokens, self._output_len)
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
        return n

    def compiled(self) -> bool:
        """Whether transformers compiled the decode forward (it does so silently or not at all)."""
        return getattr(self.model, "_compiled_call", None) is not None
