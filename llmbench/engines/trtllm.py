"""TensorRT-LLM: declared so that cases naming it are `skipped` with the install command where it
is absent (GBs, pinned to its own torch and CUDA). llmbench does not drive it for `generate` yet;
an installed TensorRT-LLM gives a skip saying so, never made-up numbers."""

from __future__ import annotations

from llmbench.engines.base import ENGINES, Engine


@ENGINES.register("trtllm")
class TRTLLMEngine(Engine):
    description = "NVIDIA TensorRT-LLM (compiled engines, in-flight batching)"
    packages = ("tensorrt_llm",)
    install = "pip install 'llmbench[trtllm]' (or: pip install tensorrt-llm --extra-index-url https://pypi.nvidia.com)"
