"""The engine interfaces (`InferenceEngine`, `TrainingEngine`; `ServedEngine` in engines/served.py), their
options models and the registry: docs/design.md, "Engines". Modules here import no heavy package at
import time: the CLI imports them to validate suites."""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic import ConfigDict, Field, ValidationError

from llmbench import precision as prec
from llmbench.errors import choices_hint
from llmbench.ids import AddedLater
from llmbench.precision import DeviceInfo
from llmbench.registry import Registry

if TYPE_CHECKING:
    from llmbench.models.shape import ModelShape


class Capability(str, Enum):
    """What an engine can do. A scenario states the capabilities it needs; an engine without them
    makes the case `skipped` with a reason that names what is missing."""

    TOKEN_TIMESTAMPS = "token_timestamps"  # generate() calls on_token as each token is produced
    REQUEST_METRICS = "request_metrics"  # generate() returns per-request TTFT and E2E, no per-token times
    LOGITS = "logits"  # full-sequence logits of a forward pass (the accuracy check)
    CONVERT = "convert"  # converts loaded bf16 weights to another precision in place (same weights)
    PARTIAL_GENERATE = "partial_generate"  # generate(tokens=n) runs a shorter generation (kernel profile)
    BUILD = "build"  # builds an artifact (a compiled engine) before it can run; the build is timed


@dataclass(frozen=True)
class ModelRef:
    """Which model to load: an architecture preset with random weights, or a pretrained checkpoint."""

    model: str | None = None  # a preset of llmbench.models.presets
    pretrained: str | None = None  # a hub id or local path
    weights: str = "random"  # "random" (exact shapes, no download) or "pretrained"
    seed: int = 0


@dataclass(frozen=True)
class CaseSize:
    """What a case will ask of a loaded model, for engines that size themselves to it (vLLM's batch
    slots and max_model_len, its CUDA-graph sizes; TensorRT-LLM's build limits); others ignore it.
    None: not known (the engine picks its default)."""

    max_batch: int | None = None  # sequences generated at once
    max_model_len: int | None = None  # prompt + output tokens of one sequence
    output_len: int | None = None  # tokens generated per sequence
    max_positions: int | None = None  # the architecture's position limit (a preset's), an upper bound


@dataclass(frozen=True)
class LoadOptions:
    """What a scenario asks of a load: the precision the weights are stored in and the case's size. How
    the engine runs (its mode, parallelism) is the engine's own options (`InferenceOptions`)."""

    precision: str = "bf16"
    size: CaseSize = field(default_factory=CaseSize)


class EngineOptions(AddedLater):
    """A case's `[engine]` table: the engine's name and its own settings, validated by the options model
    the engine declares for the interface a scenario needs (unknown keys are errors). `record()` is how
    they enter the case's params (its id and its record in a result set), spelled as the params that held
    them before the engine was an axis of its own, so those cases keep their ids."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str

    def record(self) -> dict[str, Any]:
        return {"engine": self.name, **self.model_dump(mode="json", exclude={"name"})}


class InferenceOptions(EngineOptions):
    """How an inference engine runs: its mode and how many GPUs it shards the model over."""

    added_later: ClassVar[frozenset[str]] = frozenset({"tensor_parallel"})

    mode: Literal["eager", "compiled"] = "eager"
    tensor_parallel: int = Field(1, ge=1, description="GPUs the engine shards the model over (the case's placement)")


@dataclass(frozen=True)
class RequestTiming:
    """One request (one sequence of a batch) as an engine without per-token timestamps reports it:
    seconds from the call's start to its first token and to its last, and its output tokens."""

    ttft_s: float
    e2e_s: float
    output_tokens: int


@dataclass(frozen=True)
class Generation:
    """What one generate() of a batch produced: new tokens per sequence, and for REQUEST_METRICS
    engines the per-request timings."""

    tokens: int
    requests: list[RequestTiming] | None = None


class GenerationSession(ABC):
    """A model loaded by an engine, ready to generate. Optional abilities raise NotImplementedError
    here; an engine that declares the matching Capability implements them."""

    # The clock of on_token: "stream" when on_token runs on the thread that launches the GPU work, so a
    # CUDA event recorded then marks the token on the stream; "host" when tokens arrive from another
    # process (a timestamp on the host clock as the token reaches the caller).
    token_clock: ClassVar[str] = "stream"

    @property
    @abstractmethod
    def vocab_size(self) -> int: ...

    @abstractmethod
    def shape(self) -> ModelShape:
        """The architecture, for the roofline and FLOP counts."""

    def max_positions(self) -> int | None:
        return None

    @abstractmethod
    def prepare(self, output_len: int) -> None:
        """Generation settings: greedy, exactly output_len new tokens (EOS ignored)."""

    @abstractmethod
    def generate(self, ids: Any, on_token: Callable[[], None] | None = None, tokens: int | None = None) -> Generation:
        """One generation of the batch `ids` (batch x input_len token ids). TOKEN_TIMESTAMPS engines call
        `on_token` once per generated token; `tokens` asks for a shorter run (PARTIAL_GENERATE)."""

    def logits(self, ids: Any) -> Any:
        """Full-sequence logits of one forward pass (Capability.LOGITS)."""
        raise NotImplementedError

    def convert(self, precision: str) -> None:
        """Convert the loaded bf16 weights to `precision` in place (Capability.CONVERT)."""
        raise NotImplementedError

    def token_logprobs(self, seqs: list[list[int]]) -> list[list[float]]:
        """log p(token i | tokens before it), i >= 1, of each token-id sequence: what perplexity and the
        task set are scored from (llmbench.models.quality). Engines that can, implement it."""
        raise NotImplementedError

    def greedy_tokens(self, prompts: list[list[int]], n: int) -> list[list[int]]:
        """`n` greedily chosen token ids after each prompt (EOS ignored), for greedy-output agreement."""
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        """Facts about how the engine ran this session (compile options, build time, versions), kept
        in the case's info."""
        return {}

    def code_path(self) -> dict[str, Any]:
        """What this session actually runs, as plain values (the case's `code_path`): the layout of
        its layers, compilation, attention, KV cache, quantization. Two cases whose code paths differ
        measured different code, whatever their params say."""
        return {}

    def verify(self) -> None:  # noqa: B027 - optional: most engines have nothing to check
        """Raise if the session did not run as asked (e.g. mode=compiled that did not compile)."""

    def close(self) -> None:  # noqa: B027 - optional: most engines free everything with the process
        """Release the engine's resources (processes, GPU memory)."""


@dataclass(frozen=True)
class TrainOptions:
    """How to train: which weights learn (method), how the frozen base is stored, the LoRA adapter,
    memory savers, the optimizer, and the compute precision. Recorded with the case by the scenario."""

    method: str = "full"  # "qlora" (nf4 base + LoRA), "lora" (bf16 base + LoRA), "full" (every weight)
    double_quant: bool = True  # nf4: quantize the quantization constants too (bitsandbytes)
    lora_rank: int = 16
    lora_alpha: int = 32
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    gradient_checkpointing: bool = False
    optimizer: str = "adamw"  # "adamw" (torch) or "paged_adamw_8bit" (bitsandbytes)
    lr: float = 1e-4
    dtype: str = "bf16"  # the weights' and activations' dtype: bf16 or fp32
    fp8: str = "none"  # fp8 training recipe (llmbench.engines.hf_train.FP8_RECIPES); "none": dtype only
    layers: int | None = None  # keep only the first n decoder layers of the architecture
    seed: int = 0


class TrainingSession(ABC):
    """A model loaded for training with its optimizer, stepped one batch at a time. step() adds no
    host synchronisation: losses stay on the device until loss_history() reads them after the timed
    window."""

    @abstractmethod
    def step(self, batch: Any) -> None:
        """One optimizer step on `batch` (token ids, batch x seq; labels are the ids shifted)."""

    @abstractmethod
    def loss_history(self) -> list[float]:
        """Every step's loss so far, in order (synchronises: call it outside a timed window)."""

    def eval_loss(self, batches: list[Any]) -> float:
        """The mean loss over `batches` with no update (held-out evaluation); sessions that cannot say
        raise NotImplementedError."""
        raise NotImplementedError(f"{type(self).__name__} does not evaluate a held-out loss")

    @property
    @abstractmethod
    def trainable_params(self) -> int: ...

    @property
    @abstractmethod
    def frozen_params(self) -> int: ...

    @property
    @abstractmethod
    def vocab_size(self) -> int: ...

    @abstractmethod
    def shape(self) -> ModelShape:
        """The architecture, for FLOP counts."""

    def info(self) -> dict[str, Any]:
        """Facts about the session (what was quantized, adapter sizes, optimizer), kept in the case's info."""
        return {}

    def code_path(self) -> dict[str, Any]:
        """What a training step actually runs, as plain values (the case's `code_path`): the linear
        layers' kinds, how the frozen base is stored, the optimizer, recomputation, attention."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional
        """Release the session's resources."""


class Engine(ABC):
    """What every engine has, whatever its kind: a name, a description, its options, and what the layers
    below it must know of it without naming it: the packages it needs and how to install them, the
    distributions whose versions a result set records, and its on-disk caches a run shares."""

    name: ClassVar[str]
    kind: ClassVar[str] = "engine"  # what the interface is called in messages ("inference engine", ...)
    options_attr: ClassVar[str] = "Options"  # the class attribute that holds this interface's options model
    Options: ClassVar[type[EngineOptions]] = EngineOptions
    description: ClassVar[str] = ""
    packages: ClassVar[tuple[str, ...]] = ()  # import names it needs
    install: ClassVar[str] = ""  # the install command, with the version it was written for
    distributions: ClassVar[tuple[str, ...]] = ()  # installed distributions whose versions a result set records
    # its own on-disk caches: environment variable -> folder under the run's compile cache, so a run
    # starts them cold and its cases share them as they share torch's (measure/compile_cache.py)
    cache_dirs: ClassVar[dict[str, str]] = {}

    def __init__(self, options: EngineOptions | None = None) -> None:
        self.options = options if options is not None else self.Options(name=self.name)

    @classmethod
    def options_model(cls, interface: type[Engine]) -> type[EngineOptions]:
        """The options model of this engine as `interface` (an engine of several kinds has one each)."""
        return getattr(cls, interface.options_attr)  # type: ignore[no-any-return]

    @classmethod
    def missing_reason(cls) -> str | None:
        """None when the engine can be imported here; otherwise why not and how to install it."""
        missing = [p for p in cls.packages if importlib.util.find_spec(p) is None]
        if missing:
            return f"engine {cls.name!r} needs {', '.join(missing)}, which is not installed: {cls.install}"
        return None

    @classmethod
    def kinds(cls) -> list[str]:
        """The interfaces this engine implements, by their `kind` ("inference engine", ...), for listings."""
        return [k.kind for k in cls.__mro__ if "kind" in vars(k) and k is not Engine and issubclass(k, Engine)]

    @classmethod
    def summary(cls) -> str:
        """Its kinds and description in one line: "(inference, served) vLLM: ..."."""
        return f"({', '.join(k.removesuffix(' engine') for k in cls.kinds())}) {cls.description}"


class InferenceEngine(Engine):
    """An engine that loads a model in this case process and generates with it. Subclasses declare
    what they can do and load sessions."""

    kind = "inference engine"
    Options: ClassVar[type[EngineOptions]] = InferenceOptions
    capabilities: ClassVar[frozenset[Capability]] = frozenset()
    modes: ClassVar[tuple[str, ...]] = ("eager",)
    precisions: ClassVar[frozenset[str]] = frozenset({"bf16"})  # names of llmbench.precision it can apply
    max_tensor_parallel: ClassVar[int] = 1
    in_process: ClassVar[bool] = True  # the model runs in this process (torch's memory counters see it)

    @classmethod
    def lacks(cls, needed: frozenset[Capability] | set[Capability]) -> str | None:
        """Why this engine cannot serve a scenario that needs `needed`; None if it can."""
        missing = sorted(c.value for c in set(needed) - cls.capabilities)
        if missing:
            return f"engine {cls.name!r} cannot {', '.join(missing)} (it declares: " + (
                ", ".join(sorted(c.value for c in cls.capabilities)) or "nothing") + ")"
        return None

    options: InferenceOptions

    def unsupported_reason(self, options: LoadOptions, device: DeviceInfo) -> str | None:
        """Why this engine, as its options say, cannot load `options` on `device`, before anything heavy
        happens; None if it can."""
        missing = self.missing_reason()
        if missing:
            return missing
        mode, tp = self.options.mode, self.options.tensor_parallel
        if mode not in self.modes:
            return f"engine {self.name!r} has no mode {mode!r}; {choices_hint(mode, self.modes)}"
        if options.precision not in self.precisions:
            return (f"engine {self.name!r} cannot apply precision {options.precision!r}; "
                    f"{choices_hint(options.precision, sorted(self.precisions))}")
        if tp > self.max_tensor_parallel:
            return f"engine {self.name!r} runs tensor_parallel up to {self.max_tensor_parallel}, not {tp}"
        return self.precision_reason(options.precision, device)

    @classmethod
    def precision_reason(cls, precision: str, device: DeviceInfo) -> str | None:
        """Why `precision` cannot run here with this engine. The default asks what llmbench's own
        (transformers, torchao, bitsandbytes) path needs; an engine with its own kernels checks the
        device alone (llmbench.precision.device_reason)."""
        return prec.unsupported_reason(precision, device)

    @abstractmethod
    def load(self, model: ModelRef, options: LoadOptions, device: DeviceInfo) -> GenerationSession:
        """Load (or build) the model on `device` as `options` and the engine's own options say."""

    def session_key(self, model: ModelRef, options: LoadOptions, device: DeviceInfo) -> str | None:
        """What a session loaded for these options is, as text: cases whose keys are equal may run on
        one loaded session, one after another in one process (a suite's `share_engines`), because the
        session each would load is the same (the same engine arguments: its size options included).
        None, the default: each case loads its own (its session depends on the case, e.g. on the batch
        size that picks its compile options)."""
        return None


class TrainingEngine(Engine):
    """An engine that builds a model with its optimizer for training, stepped one batch at a time."""

    kind = "training engine"
    options_attr: ClassVar[str] = "TrainingOptions"
    TrainingOptions: ClassVar[type[EngineOptions]] = EngineOptions

    @abstractmethod
    def load_for_training(self, model: ModelRef, options: TrainOptions, device: DeviceInfo) -> TrainingSession:
        """A training session of `model` on `device` as `options` say."""


ENGINES: Registry[Engine] = Registry("engine", "llmbench.engines")

E = TypeVar("E", bound=Engine)


def engine_class(name: str, interface: type[E]) -> type[E]:
    """The registered engine `name`, which must implement `interface`; a ValueError naming the valid
    engines of that kind otherwise (a suite's params validators turn it into one clear line)."""
    cls = ENGINES.get(name) if name in ENGINES else None
    if cls is not None and issubclass(cls, interface):
        return cls
    valid = [n for n, c in ENGINES if issubclass(c, interface)]
    what = f"unknown engine {name!r}" if cls is None else f"engine {name!r} is no {interface.kind}"
    raise ValueError(f"{what}; {choices_hint(name, valid, f'valid {interface.kind}s')}")


def engine_options(table: dict[str, Any], interface: type[Engine]) -> EngineOptions:
    """A case's [engine] table validated by the options model of the engine it names, as `interface`; a
    ValueError naming the key and the valid ones otherwise (a suite turns it into one clear line)."""
    cls = engine_class(str(table.get("name")), interface)
    model = cls.options_model(interface)
    try:
        return model.model_validate(table)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        valid = [f for f in model.model_fields if f != "name"]
        hint = choices_hint(where if err["type"] == "extra_forbidden" else None, valid, "valid keys")
        raise ValueError(f"[engine] of {cls.name!r}: {where}: {err['msg']}; {hint}") from None


def build_engine(options: EngineOptions, interface: type[E]) -> E:
    """The engine `options` name, built with them (nothing heavy happens: engines import lazily)."""
    return engine_class(options.name, interface)(options)
