"""A test-only engine that reports request-level timing only (no per-token timestamps, no logits), as
an engine serving from another process does. Registered through LLMBENCH_PLUGINS, it proves that the
generate scenario runs any engine by its declared capabilities, with no change to the scenario."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

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
from llmbench.models.presets import PRESETS
from llmbench.models.shape import ModelShape
from llmbench.precision import DeviceInfo

STEP_S = 0.002  # the fake's time per generated token


class FakeSession(GenerationSession):
    token_clock = "host"

    def __init__(self, model: ModelRef) -> None:
        self.preset = PRESETS[model.model or "tiny-llama"]
        self.output_len = 0
        self.closed = False

    @property
    def vocab_size(self) -> int:
        return self.preset.vocab

    def shape(self) -> ModelShape:
        return self.preset.shape()

    def prepare(self, output_len: int) -> None:
        self.output_len = output_len

    def generate(self, ids: Any, on_token: Callable[[], None] | None = None, tokens: int | None = None) -> Generation:
        assert on_token is None, "a request-level engine is never asked for per-token stamps"
        t0 = time.perf_counter()
        time.sleep(STEP_S)
        first = time.perf_counter() - t0
        time.sleep(STEP_S * (self.output_len - 1))
        end = time.perf_counter() - t0
        return Generation(self.output_len, [RequestTiming(first, end, self.output_len) for _ in range(len(ids))])

    def close(self) -> None:
        self.closed = True


@ENGINES.register("fake-requests")
class FakeRequestEngine(InferenceEngine):
    description = "test-only: request-level timing, loads at its precision, no logits"
    capabilities = frozenset({Capability.REQUEST_METRICS})
    precisions = frozenset({"bf16", "fp8"})

    @classmethod
    def precision_reason(cls, precision: str, device: DeviceInfo) -> str | None:
        return None  # the fake has no kernels: any device will do

    def load(self, model: ModelRef, options: LoadOptions, device: DeviceInfo) -> FakeSession:
        return FakeSession(model)
