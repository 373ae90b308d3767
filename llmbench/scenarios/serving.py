"""serving: a load point against an OpenAI-compatible server (TTFT, TPOT, ITL, throughput, goodput).

A case talks to a server already running (`url`), or starts one and stops it at the end, also when the
case fails: a served engine (`engine = "vllm"`, its command built from typed `engine_options`), or any
other server from a command line with placeholders (`server`). The case process builds the served
engine and hands it over (engine_slot). One case is one load point (a rate, a concurrency or a
trace); a sweep is a suite matrix over `rate` or `concurrency`.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError, field_serializer, model_validator

from llmbench.caseinfo import RequestRateInfo
from llmbench.engines.base import engine_class
from llmbench.engines.served import CommandServer, ServedEngine, ServeOptions, ServerSite
from llmbench.errors import UserError
from llmbench.ids import case_id
from llmbench.measure.timing import StopRule
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import SCENARIOS, CaseContext, EngineSlot, Scenario, ScenarioParams

LOG_DIR_ENV = "LLMBENCH_SERVING_LOGS"  # where server logs go (default ./serving-logs)
LOG_TAIL_LINES = 30


class ServingParams(ScenarioParams):
    added_later: ClassVar[frozenset[str]] = frozenset({"server_scope", "engine", "engine_options"})

    url: str | None = Field(None, description="base URL of a running server, http://host:port")
    engine: str | None = Field(None, description="a served engine to start (llmbench list engines), e.g. vllm")
    engine_options: dict[str, Any] | None = Field(
        None, description="the served engine's typed options (vllm: max_model_len, prefix_caching, "
        "max_num_seqs, gpu_memory_utilization, kv_cache_dtype, enforce_eager); precision and n_gpus are the case's")
    server: list[str] | None = Field(None, description="command that starts the server, with placeholders "
                                     "{python} {host} {port} {model} {model_dir} {tokenizer_dir}")
    server_env: dict[str, str] | None = Field(None, description="environment variables added for the server")
    ready_timeout_s: float = Field(900.0, gt=0, description="how long a started server may take to answer")
    server_scope: Literal["case", "suite"] = Field(
        "case", description="case: a server started and stopped per case; suite: started by the first case "
        "and kept for the next cases with the same server (a sweep pays one start; turn off the server's "
        "prefix cache, since every point sends prompts of the same seed), stopped when the suite ends")
    preset: str | None = Field(None, description="model preset whose config dir {model_dir} is written")
    model: str | None = Field(None, description="model name sent in requests (default: the preset)")
    precision: str | None = Field(None, description="what the server runs, as a label for tables and "
                                  "compare --base (the server command sets it)")
    endpoint: Literal["completions", "chat"] = "completions"
    tokenizer: str = Field("offline", description="tokenizer dir or hub id; 'offline': built for the preset")
    input_len: int = Field(128, ge=1)
    output_len: int = Field(128, ge=1)
    rate: float | None = Field(None, gt=0, description="requests per second (inf: all at once)")
    concurrency: int | None = Field(None, ge=1, description="requests kept in flight")
    num_requests: int = Field(100, ge=1, description="requests (sessions with multi_turn) to send at most")
    duration_s: float | None = Field(None, gt=0, description="stop starting requests after this long")
    burstiness: float = Field(1.0, gt=0, description="gamma shape of arrival gaps (1: Poisson)")
    seed: int = 0
    slo: str | None = Field(None, description="goodput objectives in ms, e.g. 'ttft:500 tpot:50'")
    trace: str | None = Field(None, description="JSONL (Mooncake) or CSV (BurstGPT) trace to replay")
    time_scale: float = Field(1.0, gt=0, description="multiplies the trace's time offsets")
    dataset: str | None = Field(None, description="ShareGPT-style JSON of real prompts")
    multi_turn: int = Field(1, ge=1, description="turns per conversation (each appends to the history)")
    n_gpus: int = Field(1, ge=1, description="GPUs the server uses, for per-GPU throughput")
    request_timeout_s: float = Field(600.0, gt=0, description="longest silence inside one response")

    @field_serializer("rate")
    def _rate_text(self, v: float | None) -> float | str | None:
        return "inf" if v is not None and math.isinf(v) else v  # JSON has no infinity

    @model_validator(mode="before")
    @classmethod
    def _engine_precision(cls, data: Any) -> Any:
        """A served engine runs the case's precision, so its label is what ran: bf16 unless given."""
        if isinstance(data, dict) and data.get("engine") is not None and data.get("precision") is None:
            data = {**data, "precision": "bf16"}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> ServingParams:
        from llmbench.serving.analysis import parse_slo

        if sum(x is not None for x in (self.url, self.server, self.engine)) != 1:
            raise ValueError("give one of url (a running server), engine (a served engine to start) or server "
                             "(a command that starts one)")
        if self.engine is not None:
            serve_options(self)  # the engine is a served one and its options are valid
        elif self.engine_options is not None:
            raise ValueError("engine_options are the options of a served engine: give engine too")
        if self.trace is not None:
            if self.rate is not None or self.concurrency is not None or self.multi_turn > 1 or self.dataset:
                raise ValueError("a trace sets its own arrivals and lengths: leave out rate, concurrency, "
                                 "dataset and multi_turn")
        elif (self.rate is None) == (self.concurrency is None):
            raise ValueError("give either rate (requests per second, inf for all at once) or concurrency")
        if self.tokenizer == "offline" and self.preset is None:
            raise ValueError("tokenizer 'offline' is built for a preset's vocabulary: give preset, or a tokenizer")
        if self.model is None and self.preset is None:
            raise ValueError("give model (the name the server serves) or preset")
        if self.preset is not None:
            from llmbench.models.presets import PRESETS

            if self.preset not in PRESETS:
                raise ValueError(f"unknown preset {self.preset!r}; valid: {', '.join(PRESETS)}")
        try:
            parse_slo(self.slo)
        except UserError as e:
            raise ValueError(str(e)) from None
        return self

    @property
    def served_model(self) -> str:
        return self.model or str(self.preset)

    @property
    def starts_server(self) -> bool:
        """The case starts its server (an engine or a command), rather than loading one at `url`."""
        return self.url is None


def serve_options(params: ServingParams) -> ServeOptions:
    """The typed options of the case's served engine: its engine_options, its precision and GPUs."""
    cls = engine_class(str(params.engine), ServedEngine)
    given = dict(params.engine_options or {})
    taken = sorted(ServeOptions.case_fields & set(given))
    if taken:
        raise ValueError(f"engine_options: {', '.join(taken)} are the case's (precision, n_gpus), not options")
    try:
        return cls.Options.model_validate({**given, "precision": params.precision, "tensor_parallel": params.n_gpus})
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ValueError(f"engine_options of {params.engine!r}: {where}: {err['msg']}; valid: "
                         f"{', '.join(f for f in cls.Options.model_fields if f not in ServeOptions.case_fields)}"
                         ) from None


def served_engine(params: ServingParams) -> ServedEngine | None:
    """The server the case starts (a served engine, or a raw command's); None for a running one at url."""
    if params.server is not None:
        return CommandServer(params.server)
    if params.engine is not None:
        return engine_class(params.engine, ServedEngine)(serve_options(params))
    return None


@SCENARIOS.register("serving")
class ServingScenario(Scenario):
    sweep_axes = ("concurrency", "request_rate", "rate")  # request_rate: published serving figures
    metric_axes: ClassVar[dict[str, str]] = {"ttft_ms": "input_len"}
    Info = RequestRateInfo
    Params = ServingParams
    headline = ("output_tokens_per_s", "request_throughput_per_s", "ttft_ms", "tpot_ms")
    description = "load on an OpenAI-compatible server: TTFT, TPOT, ITL, E2E, throughput, goodput"
    engine_slot = EngineSlot(ServedEngine)

    def build_engine(self, params: Any) -> ServedEngine | None:
        return served_engine(params)

    def gpus_needed(self, params: Any) -> int:
        """A server the case starts runs on the case's GPUs (n_gpus of them); one at `url` runs elsewhere."""
        return int(params.n_gpus) if params.starts_server else 1

    def server_scope(self, params: Any) -> Literal["case", "suite"]:
        return params.server_scope if params.starts_server else "case"

    def skip_reason(self, params: Any, device: DeviceInfo) -> str | None:
        if importlib.util.find_spec("aiohttp") is None:
            return "the serving client needs aiohttp: pip install 'llmbench[serving]'"
        if importlib.util.find_spec("transformers") is None:
            return "exact-length prompts need transformers: pip install 'llmbench[hf]'"
        if params.engine is not None:
            return engine_class(params.engine, ServedEngine).serve_reason(serve_options(params), device)
        module = CommandServer.module(params.server) if params.server else None
        if module and importlib.util.find_spec(module.split(".")[0]) is None:
            return f"the server module {module} is not installed here ({module.split('.')[0]} is missing)"
        return None

    def estimate_s(self, params: Any, rule: StopRule) -> float:
        # a suite-scoped server's start is paid once, by the first case that needs it: not quoted per case
        startup = 60.0 if params.starts_server and params.server_scope == "case" else 5.0
        if params.duration_s:
            return startup + params.duration_s + 10.0
        if params.rate and math.isfinite(params.rate):
            return startup + params.num_requests / params.rate + 10.0
        return startup + 30.0

    def run(self, params: Any, ctx: CaseContext) -> None:
        engine = ctx.engine(ServedEngine) if params.starts_server else None
        ctx.metrics.update(measure(params, ctx.info, lambda f: ctx.progress(f, "requests"), engine))


def measure(params: ServingParams, info: dict[str, Any], progress: Any = None,
            engine: ServedEngine | None = None) -> dict[str, Any]:
    """One load point: workload, server (started here or already running), load, metrics. `info`
    is filled as it goes, so a failed case keeps the server's log tail and what was measured. `engine`:
    the server to start, as the case process hands it over; a direct call leaves it to the params."""
    from llmbench.serving.analysis import parse_slo
    from llmbench.serving.bench import run_point
    from llmbench.serving.client import Endpoint

    with tempfile.TemporaryDirectory(prefix="llmbench-serving-") as tmp:
        shared = _shared_folder(params)
        work = shared / _server_key(params) if shared else Path(tmp)  # a shared server's files outlive the case
        work.mkdir(parents=True, exist_ok=True)
        tok_dir = _tokenizer_dir(params, work)
        sessions, sched, asked = workload(params, tok_dir, info)
        with _server(params, engine or served_engine(params), work, tok_dir, info, shared) as url:
            ep = Endpoint(url, params.endpoint, params.served_model, params.request_timeout_s)
            info["url"] = url
            return run_point(ep, sessions, sched, slo=parse_slo(params.slo), n_gpus=params.n_gpus,
                             asked_rate=asked, progress=progress, info=info)


def _shared_folder(params: ServingParams) -> Path | None:
    """Where a suite-scoped server is recorded (the runner's folder for the suite), None otherwise."""
    from llmbench.serving.server import SHARED_ENV

    folder = os.environ.get(SHARED_ENV)
    return Path(folder) if params.starts_server and params.server_scope == "suite" and folder else None


def _server_key(params: ServingParams) -> str:
    """What makes two cases' servers the same server: its command (or engine, options, precision and
    GPUs), model files, tokenizer and env."""
    import hashlib
    import json

    served = [params.engine, params.engine_options, params.precision, params.n_gpus] if params.engine else []
    blob = json.dumps([params.server, params.preset, params.model, params.tokenizer, params.server_env, *served],
                      sort_keys=True)
    return "server-" + hashlib.sha256(blob.encode()).hexdigest()[:12]


def _tokenizer_dir(params: ServingParams, work: Path) -> str:
    if params.tokenizer != "offline":
        return params.tokenizer
    if (work / "tokenizer" / "tokenizer.json").is_file():  # a shared server's, written by an earlier case
        return str(work / "tokenizer")
    from llmbench.models.presets import get_preset
    from llmbench.models.tokenizer import build_offline_tokenizer

    return str(build_offline_tokenizer(work / "tokenizer", get_preset(str(params.preset)).vocab))


def workload(params: ServingParams, tok_dir: str, info: dict[str, Any]) -> tuple[list[Any], Any, float | None]:
    """The sessions to send, their schedule, and the rate asked (None for concurrency)."""
    from llmbench.serving.load import Schedule, arrival_offsets
    from llmbench.serving.prompts import load_tokenizer, sharegpt_sessions, sized_sessions, synthetic_sessions
    from llmbench.serving.trace import read_trace

    tok = load_tokenizer(tok_dir)
    n, seed = params.num_requests, params.seed
    info["seed"] = seed
    if params.trace is not None:
        rows = read_trace(params.trace, params.time_scale, limit=n)
        sessions = sized_sessions(tok, [(r.input_len, r.output_len) for r in rows], seed)
        span = rows[-1].offset_s
        info["trace"] = {"requests": len(rows), "span_s": round(span, 3)}
        sched = Schedule(offsets_s=tuple(r.offset_s for r in rows), duration_s=params.duration_s)
        return sessions, sched, (len(rows) - 1) / span if span > 0 else math.inf
    if params.dataset is not None:
        sessions = sharegpt_sessions(params.dataset, tok, n, output_len=params.output_len, seed=seed)
    else:
        sessions = synthetic_sessions(tok, n, params.input_len, params.output_len, turns=params.multi_turn, seed=seed)
    if params.concurrency is not None:
        return sessions, Schedule(concurrency=params.concurrency, duration_s=params.duration_s), None
    rate = float(params.rate)  # type: ignore[arg-type]
    offsets = arrival_offsets(len(sessions), rate, params.burstiness, seed)
    if len(offsets) > 1 and offsets[-1] > 0:
        info["scheduled_request_rate_per_s"] = round((len(offsets) - 1) / offsets[-1], 4)
    return sessions, Schedule(offsets_s=offsets, duration_s=params.duration_s), rate


@contextmanager
def _server(params: ServingParams, engine: ServedEngine | None, work: Path, tok_dir: str, info: dict[str, Any],
            shared: Path | None = None) -> Iterator[str]:
    """The URL to load: `params.url`, or `engine` started and stopped after (or, with `shared`, the
    suite's server, started by the first case that needs it)."""
    if engine is None:
        yield str(params.url)
        return
    from llmbench.serving.server import free_port, shared_server, sigterm_as_interrupt

    model_dir = None
    if params.preset is not None and engine.wants_model_dir():
        from llmbench.models.hf_dir import write_config_dir

        model_dir = str(write_config_dir(params.preset, work / "model", tok_dir))
    site = ServerSite(host="127.0.0.1", port=free_port(), model=params.served_model, tokenizer_dir=tok_dir,
                      model_dir=model_dir, python=sys.executable)
    log = _log_path(params)
    env = {**os.environ, **params.server_env} if params.server_env else None
    if shared is not None:
        process = engine.server(site, log.resolve(), env, detach=True)
        url, got = shared_server(shared, work.name, process, site.url, params.ready_timeout_s)
        info.update(got)
        if not got.get("server_reused"):
            info["server_command"] = process.command  # what ran: a served engine's is built, not in the params
        yield url
        return
    info["server_log"] = os.path.relpath(log) if not os.path.relpath(log).startswith("..") else log.name
    with sigterm_as_interrupt():
        engine.start(site, log, env)
        info["server_command"] = engine.process.command if engine.process is not None else None
        try:
            info["server_ready_s"] = round(engine.wait_ready(params.ready_timeout_s), 2)
            yield engine.url
        finally:
            info["server_exit_code"] = engine.stop()
            if engine.process is not None:
                info["server_log_tail"] = engine.process.log_tail(LOG_TAIL_LINES).splitlines()


def _log_path(params: ServingParams) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = case_id("serving", params.model_dump(mode="json")).replace("/", "-")
    return Path(os.environ.get(LOG_DIR_ENV, "serving-logs")) / f"{name}-{stamp}.log"
