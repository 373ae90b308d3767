"""llmbench: benchmark LLM workloads across GPUs, precisions and engines."""

__version__ = "0.1.0"
