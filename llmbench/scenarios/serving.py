"""serving: a load point against an OpenAI-compatible server (TTFT, TPOT, ITL, throughput, goodput).

The server is the case's served engine ([engine] table): one the case starts and stops at the end, also
when the case fails (a served engine whose command it builds from typed options, or the `command` engine's
raw command line with placeholders), or one already running (the `url` engine). The case process builds
it and hands it over (engine_slot). One case is one load point (a rate, a concurrency or a trace); a
sweep is a suite matrix over `rate` or `concurrency`.
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

from pydantic import Field, field_serializer, model_validator

from llmbench.caseinfo import RequestRateInfo
from llmbench.engines.served import ServedEngine, ServerSite
from llmbench.errors import UserError, choices_hint
from llmbench.ids import case_id
from llmbench.measure import quiet
from llmbench.measure.timing import StopRule
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import SCENARIOS, CaseContext, Charts, EngineSlot, Scenario, ScenarioParams
from llmbench.scenarios.reading import CapacityLoad, Reading
from llmbench.serving.client import DEFAULT_REQUEST_TIMEOUT_S

LOG_DIR_ENV = "LLMBENCH_SERVING_LOGS"  # where server logs go (default ./serving-logs)
LOG_TAIL_LINES = 30


class ServingParams(ScenarioParams):
    """The load and its tokenizer. The server (a served engine the case starts, a raw command's, or one
    running at a URL) is the case's [engine] table; the GPUs it runs on, its placement."""

    preset: str | None = Field(None, description="model preset whose config dir {model_dir} is written")
    model: str | None = Field(None, description="model name sent in requests (default: the preset)")
    precision: str | None = Field(None, description="what the server runs: a served engine runs it (bf16 unless "
                                  "given); for a command or a running server, a label for tables and compare --base")
    endpoint: Literal["completions", "chat"] = "completions"
    tokenizer: str = Field("offline", description="tokenizer dir or hub id; 'offline': built for the preset")
    input_len: int = Field(128, ge=1)
    output_len: int = Field(128, ge=1)
    rate: float | None = Field(None, gt=0, description="requests per second (inf: all at once)")
    concurrency: int | None = Field(None, ge=1, description="requests kept in flight")
    num_requests: int = Field(100, ge=1, description="requests (sessions with multi_turn) to send at most")
    duration_s: float | None = Field(None, gt=0, description="stop starting requests after this long (a request "
                                     "in flight runs to its end or its request_timeout_s)")
    burstiness: float = Field(1.0, gt=0, description="gamma shape of arrival gaps (1: Poisson)")
    seed: int = 0
    slo: str | None = Field(None, description="goodput objectives in ms, e.g. 'ttft:500 tpot:50'")
    trace: str | None = Field(None, description="JSONL (Mooncake) or CSV (BurstGPT) trace to replay")
    time_scale: float = Field(1.0, gt=0, description="multiplies the trace's time offsets")
    dataset: str | None = Field(None, description="ShareGPT-style JSON of real prompts")
    multi_turn: int = Field(1, ge=1, description="turns per conversation (each appends to the history)")
    request_timeout_s: float = Field(DEFAULT_REQUEST_TIMEOUT_S, gt=0, description="longest one request may take, "
                                     "from its send to its last byte; a request past it fails with 'timeout'")
    # added after serving sets were published: out of the id while at their defaults (ids.AddedLater)
    added_later: ClassVar[frozenset[str]] = frozenset({
        "limits", "search", "search_start", "search_top", "search_repeats", "search_resolution",
        "client_processes", "saturation_window_s"})
    limits: str | None = Field(None, description="SLO as percentile limits, 'ttft_p99=500ms,tpot_p99=30ms', or a "
                               "preset (mlperf-llama3.1-8b-interactive, ...): each point is checked against it")
    search: Literal["concurrency", "rate"] | None = Field(None, description="search the highest concurrency or "
                                                          "rate that meets `limits` (serving/search.py)")
    search_start: float = Field(1.0, gt=0, description="the search's first load")
    search_top: float = Field(4096.0, gt=0, description="the search's highest load")
    search_repeats: int = Field(3, ge=1, description="refinements at the boundary (the capacity's interval)")
    search_resolution: float = Field(0.1, gt=0, lt=1, description="refine until the bracket is this share of the load")
    client_processes: int = Field(1, ge=1, description="processes the client drives the load from")
    saturation_window_s: float = Field(2.0, ge=0, description="end a point early when its queue or TTFT grows "
                                       "over 3 windows of this length in a row (0: never)")

    @field_serializer("rate")
    def _rate_text(self, v: float | None) -> float | str | None:
        return "inf" if v is not None and math.isinf(v) else v  # JSON has no infinity

    @model_validator(mode="after")
    def _consistent(self) -> ServingParams:
        from llmbench.serving.analysis import parse_slo
        from llmbench.serving.slo import parse_limits

        if self.search is not None:
            if self.rate is not None or self.concurrency is not None or self.trace is not None:
                raise ValueError("a search picks its own loads: leave out rate, concurrency and trace")
            if self.limits is None:
                raise ValueError("a search needs the SLO it searches under: give limits, e.g. "
                                 "'ttft_p99=500ms,tpot_p99=30ms' or a preset")
            if self.search == "concurrency" and self.search_start != int(self.search_start):
                raise ValueError("search_start of a concurrency search is a whole number")
        elif self.trace is not None:
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
                raise ValueError(f"unknown preset {self.preset!r}; {choices_hint(self.preset, PRESETS)}")
        try:
            parse_slo(self.slo)
            if self.limits is not None:
                parse_limits(self.limits)
        except UserError as e:
            raise ValueError(str(e)) from None
        return self

    @property
    def served_model(self) -> str:
        return self.model or str(self.preset)

    def at_point(self, load: float, repeat: int) -> ServingParams:
        """The params of one point of a search: `load` on the searched axis, its own seed, no search."""
        assert self.search is not None
        value: float | int = int(load) if self.search == "concurrency" else float(load)
        return self.model_copy(update={self.search: value, "search": None, "seed": self.seed + repeat})


class ServingReading(Reading[ServingParams]):
    """A search case's row of "At the SLO": the SLO, the searched axis and the load."""

    def capacity_load(self, params: ServingParams) -> CapacityLoad | None:
        """A search's SLO (`limits`), axis and load: 'llama-3-8b, 1024 in / 128 out tokens' and what else
        shapes the requests where it is not the default (chat, a dataset, a trace, turns, burstiness)."""
        if not params.search:
            return None
        load = f"{params.model or params.preset}, {params.input_len} in / {params.output_len} out tokens"
        defaults = {"endpoint": "completions", "multi_turn": 1, "burstiness": 1.0}
        given = {k: getattr(params, k) for k in ("endpoint", "dataset", "trace", "multi_turn", "burstiness")}
        extra = [f"{k} {v}" for k, v in given.items() if v is not None and v != defaults.get(k)]
        return CapacityLoad(str(params.limits), params.search, ", ".join([load, *extra]))


@SCENARIOS.register("serving")
class ServingScenario(Scenario[ServingParams]):
    # request_rate: published serving figures
    charts = Charts(sweep_axes=("concurrency", "request_rate", "rate"), metric_axes={"ttft_ms": "input_len"})
    Info = RequestRateInfo
    Params = ServingParams
    headline = ("output_tokens_per_s", "request_throughput_per_s", "ttft_ms", "tpot_ms")
    reading = ServingReading()
    description = "load on an OpenAI-compatible server: TTFT, TPOT, ITL, E2E, throughput, goodput"
    engine_slot = EngineSlot(ServedEngine, named_by={"server": "command", "url": "url"})
    gpus_param = "n_gpus"

    @property
    def served(self) -> ServedEngine:
        if not isinstance(self.engine, ServedEngine):
            raise RuntimeError("a serving case runs on a served engine: its [engine] table names one")
        return self.engine

    def complete(self, params: ServingParams) -> Any:
        """A served engine that builds its command runs the case's precision, so the label is what ran:
        bf16 unless given."""
        if params.precision is None and self.served.precisions:
            return params.model_copy(update={"precision": "bf16"})
        return params

    def server_scope(self, params: ServingParams) -> Literal["case", "suite"]:
        return self.served.options.server_scope if self.served.starts else "case"

    def serves_elsewhere(self) -> bool:
        return self.engine is not None and not self.served.starts  # serve-bench --url: the one measured

    def skip_reason(self, params: ServingParams, device: DeviceInfo) -> str | None:
        if importlib.util.find_spec("aiohttp") is None:
            return "the serving client needs aiohttp: pip install 'llmbench[serving]'"
        if importlib.util.find_spec("transformers") is None:
            return "exact-length prompts need transformers: pip install 'llmbench[hf]'"
        return self.served.serve_reason(params.precision, device)

    def estimate_s(self, params: ServingParams, rule: StopRule) -> float:
        # a suite-scoped server's start is paid once, by the first case that needs it: not quoted per case
        startup = 60.0 if self.served.starts and self.server_scope(params) == "case" else 5.0
        if params.search is not None:  # about 8 coarse points and 4 a refinement, each at most a point's time
            per_point = params.duration_s + 10.0 if params.duration_s else 30.0
            return startup + (8 + 4 * params.search_repeats) * per_point
        if params.duration_s:
            return startup + params.duration_s + 10.0
        if params.rate and math.isfinite(params.rate):
            return startup + params.num_requests / params.rate + 10.0
        return startup + 30.0

    def run(self, params: ServingParams, ctx: CaseContext) -> None:
        engine = ctx.engine(ServedEngine)
        ctx.metrics.update(measure(params, ctx.info, engine, self.placement.gpus,
                                   lambda f: ctx.progress(f, "requests")))


def measure(params: ServingParams, info: dict[str, Any], engine: ServedEngine, placed_gpus: int = 1,
            progress: Any = None) -> dict[str, Any]:
    """One load point: workload, server (`engine`: started here, or already running), load, metrics.
    `info` is filled as it goes, so a failed case keeps the server's log tail and what was measured."""
    from llmbench.serving.analysis import parse_slo
    from llmbench.serving.bench import run_point
    from llmbench.serving.client import Endpoint
    from llmbench.serving.slo import parse_limits

    with tempfile.TemporaryDirectory(prefix="llmbench-serving-") as tmp:
        shared = _shared_folder(engine)
        work = shared / _server_key(params, engine) if shared else Path(tmp)  # a shared server's files outlive it
        work.mkdir(parents=True, exist_ok=True)
        tok_dir = _tokenizer_dir(params, work)
        sessions, sched, asked = workload(params, tok_dir, info)
        with _server(params, engine, work, tok_dir, info, shared) as url:
            ep = Endpoint(url, params.endpoint, params.served_model, params.request_timeout_s)
            info["url"] = url
            quiet.timed(info)  # beside other cases: none of them sets up under its load
            limits = parse_limits(params.limits) if params.limits else None
            if params.search is not None:
                from llmbench.scenarios.serving_search import run_search

                return run_search(params, ep, tok_dir, info, engine.gpus(placed_gpus), workload, progress)
            return run_point(ep, sessions, sched, slo=parse_slo(params.slo), limits=limits,
                             n_gpus=engine.gpus(placed_gpus), asked_rate=asked, progress=progress, info=info,
                             client_processes=params.client_processes, window_s=params.saturation_window_s)


def _shared_folder(engine: ServedEngine) -> Path | None:
    """Where a suite-scoped server is recorded (the runner's folder for the suite), None otherwise."""
    from llmbench.serving.server import SHARED_ENV

    folder = os.environ.get(SHARED_ENV)
    return Path(folder) if engine.starts and engine.options.server_scope == "suite" and folder else None


def _server_key(params: ServingParams, engine: ServedEngine) -> str:
    """What makes two cases' servers the same server: its engine and options (a command's command line,
    its env, its GPUs), the precision it runs, model files and tokenizer."""
    import hashlib
    import json

    blob = json.dumps([engine.options.model_dump(mode="json"), params.precision, params.preset, params.model,
                       params.tokenizer], sort_keys=True)
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
    if params.search is not None:  # the search's first point stands for its workload until it runs its own
        params = params.at_point(params.search_start, 0)
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
def _server(params: ServingParams, engine: ServedEngine, work: Path, tok_dir: str, info: dict[str, Any],
            shared: Path | None = None) -> Iterator[str]:
    """The URL to load: a running server's, or `engine` started and stopped after (or, with `shared`,
    the suite's server, started by the first case that needs it)."""
    if not engine.starts:
        yield engine.url
        return
    from llmbench.serving.server import free_port, shared_server, sigterm_as_interrupt

    model_dir = None
    if params.preset is not None and engine.wants_model_dir():
        from llmbench.models.hf_dir import write_config_dir

        model_dir = str(write_config_dir(params.preset, work / "model", tok_dir))
    site = ServerSite(host="127.0.0.1", port=free_port(), model=params.served_model, tokenizer_dir=tok_dir,
                      model_dir=model_dir, python=sys.executable, precision=params.precision or "bf16")
    log = _log_path(params)
    env = {**os.environ, **engine.options.server_env} if engine.options.server_env else None
    if shared is not None:
        process = engine.server(site, log.resolve(), env, detach=True)
        url, got = shared_server(shared, work.name, process, site.url, engine.options.ready_timeout_s)
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
            info["server_ready_s"] = round(engine.wait_ready(engine.options.ready_timeout_s), 2)
            yield engine.url
        finally:
            info["server_exit_code"] = engine.stop()
            if engine.process is not None:
                info["server_log_tail"] = engine.process.log_tail(LOG_TAIL_LINES).splitlines()


def _log_path(params: ServingParams) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = case_id("serving", params.model_dump(mode="json")).replace("/", "-")
    return Path(os.environ.get(LOG_DIR_ENV, "serving-logs")) / f"{name}-{stamp}.log"
