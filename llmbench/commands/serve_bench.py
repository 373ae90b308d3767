"""`llmbench serve-bench`: load a running OpenAI-compatible server at several rates or concurrencies,
print one row per point, and write a result set that `compare` and `report` read."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

import typer

from llmbench import api
from llmbench.caseinfo import RequestRateInfo
from llmbench.commands.common import parse_budget
from llmbench.errors import UserError
from llmbench.redact import redact
from llmbench.report.tables import MISSING, Table, fmt_num
from llmbench.report.terminal import SafeConsole, one_line, print_terminal
from llmbench.results import CaseResult, MetricResult
from llmbench.serving.client import DEFAULT_REQUEST_TIMEOUT_S
from llmbench.serving.slo import SLO_PRESETS

HELP = """Load a running OpenAI-compatible server (vLLM, SGLang, TGI, ...) and measure TTFT, TPOT, ITL,
E2E latency, throughput and goodput at each point of a sweep.

Give --rate (requests/s: Poisson arrivals, or gamma with --burstiness; 'inf' sends all at once) or
--concurrency (requests kept in flight), each a comma-separated list: one point per value; or
--search concurrency|rate with --slo to find the highest load that meets every limit (coarse doubling,
then --repeats bisections at the boundary: the capacity with the interval over them, and the goodput and
SLO attainment of every point). A point whose queue or TTFT grows window after window is saturated: it
ends early and never counts as meeting the SLO. Prompts
have exactly --input-len tokens for --tokenizer (default: the model name) and every answer exactly
--output-len tokens (ignore_eos and min_tokens are sent). The result set goes to
OUT/<gpu-slug>/<name>-<UTC>.json, one case per point, with every request's timings.

Each point is a case run by the same runner as `llmbench run` (its own process; --resume, --budget).
The server is checked first: one not there is bad input before anything slow is loaded.

A server error (an HTTP error, a broken stream; the test request before each point included) is a
failed request of that point, counted in failed_requests; a point whose requests all failed, or whose
server went away, is a failed point, and the sweep goes on. A request that takes longer than
--request-timeout (600 s unless given; --duration only stops starting new requests) is a failed
request, reason "timeout". Exit code 0: every point measured; 1: a point failed; 2: bad input
(options, or a server that is not there or does not serve --model at the first point).

Example: llmbench serve-bench --url http://127.0.0.1:8000 --model meta-llama/Meta-Llama-3-8B --concurrency 1,4,16,64
Example: llmbench serve-bench --url http://127.0.0.1:8000 --model m --slo ttft_p99=500ms,tpot_p99=30ms
  --search concurrency
"""


def parse_points(text: str | None, what: str, integer: bool) -> list[float] | None:
    """'1,2,4' -> [1.0, 2.0, 4.0]; 'inf' allowed for rates; anything else is a UserError."""
    if text is None:
        return None
    out: list[float] = []
    for part in (p.strip() for p in text.split(",")):
        try:
            v = float(part)
        except ValueError:
            raise UserError(f"--{what} {text!r}: {part!r} is not a number") from None
        if not v > 0 or math.isnan(v):
            raise UserError(f"--{what} {text!r}: every value must be > 0 (got {part})")
        if integer and (math.isinf(v) or v != int(v)):
            raise UserError(f"--{what} {text!r}: every value must be a whole number (got {part})")
        out.append(v)
    return out


def _value(m: dict[str, MetricResult], name: str, stat: str | None = None) -> float | None:
    r = m.get(name)
    if r is None:
        return None
    got = getattr(r.stats, stat, None) if stat and r.stats else None
    return float(got) if got is not None else r.value


COLUMNS = ("point", "capacity", "asked req/s", "sent req/s", "done req/s", "out tok/s", "TTFT p50 ms", "TTFT p99 ms",
           "TPOT p50 ms", "ITL p50 ms", "goodput req/s", "failed")


def _capacity(m: dict[str, MetricResult]) -> str:
    """A search's answer: the capacity and its interval with the coverage it achieves."""
    name = next((n for n in ("capacity_concurrency", "capacity_rate") if n in m), None)
    if name is None:
        return MISSING
    r = m[name]
    ci = r.stats.ci if r.stats is not None else None
    text = fmt_num(r.value) + (f" [{fmt_num(ci.lo)}, {fmt_num(ci.hi)}] {ci.level:.0%}" if ci else "")
    return text + (" (bound)" if r.flags else "")


def _row(case: CaseResult) -> list[str]:
    p, m = case.params, case.metrics
    point = (f"search {p['search']}" if p.get("search") else
             f"rate {p['rate']}" if p.get("rate") is not None else f"concurrency {p.get('concurrency')}")
    if case.status != "ok":  # the point as a whole failed: why, on one line (the result set keeps it all)
        return [point, *([MISSING] * (len(COLUMNS) - 2)), f"{case.status}: {one_line(case.reason or case.status)}"]
    asked = RequestRateInfo.of(case.info).asked_request_rate_per_s
    cells = [
        _capacity(m),
        fmt_num(asked) if isinstance(asked, (int, float)) else str(asked or MISSING),
        fmt_num(_value(m, "achieved_request_rate_per_s")),
        fmt_num(_value(m, "request_throughput_per_s")),
        fmt_num(_value(m, "output_tokens_per_s")),
        fmt_num(_value(m, "ttft_ms")), fmt_num(_value(m, "ttft_ms", "p99")),
        fmt_num(_value(m, "tpot_ms")), fmt_num(_value(m, "itl_ms")),
        fmt_num(_value(m, "goodput_per_s")) if "goodput_per_s" in m else MISSING,
    ]
    return [point, *cells, str(int(_value(m, "failed_requests") or 0))]


def results_table(cases: list[CaseResult], title: str) -> Table:
    """One row per point of the sweep (it fits the terminal's width, or stacks)."""
    return Table(title, list(COLUMNS), [_row(c) for c in cases],
                 caption="failed: requests that got a server error, a malformed reply or a dropped stream. capacity: "
                 "a search's median over its refinements [interval] and the coverage that interval achieves; the "
                 "other columns are of the highest point that met the SLO (llmbench show: every point).")


class _Points(api.UI):
    """Each point's line as it starts, and the runner's warnings."""

    def __init__(self, console: SafeConsole) -> None:
        self.console = console

    def line(self, text: str) -> None:
        self.console.print(text)

    def case_start(self, case: Any, index: int) -> None:
        self.console.print(f"point {index + 1}: {case.label}", highlight=False, soft_wrap=True)

    def warn(self, text: str) -> None:
        SafeConsole(stderr=True).print(f"warning: {text}", highlight=False, soft_wrap=True)


def serve_bench(
    url: str = typer.Option(..., "--url", help="Base URL of the running server, e.g. http://127.0.0.1:8000."),
    model: str = typer.Option(..., "--model", help="Model name the server serves (sent in every request)."),
    rate: Optional[str] = typer.Option(None, "--rate", help="Request rates to sweep, req/s: 1,2,4 (inf: all at "
                                       "once)."),
    concurrency: Optional[str] = typer.Option(None, "--concurrency", help="Concurrencies to sweep: 1,4,16."),
    endpoint: str = typer.Option("completions", "--endpoint", help="completions or chat."),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="Tokenizer dir or hub id for exact-length "
                                            "prompts (default: --model)."),
    input_len: int = typer.Option(128, "--input-len", min=1, help="Prompt tokens per request."),
    output_len: int = typer.Option(128, "--output-len", min=1, help="Output tokens per request (exact)."),
    num_requests: int = typer.Option(100, "--num-requests", "-n", min=1, help="Requests per point (at most)."),
    duration: Optional[float] = typer.Option(None, "--duration", help="Stop starting requests after this many "
                                             "seconds of a point (requests in flight run to their end or "
                                             "--request-timeout)."),
    request_timeout: float = typer.Option(DEFAULT_REQUEST_TIMEOUT_S, "--request-timeout", help="Seconds one "
                                          "request may take, from its send to its last byte; a request past "
                                          "it is a failed request (reason 'timeout').", show_default=True),
    burstiness: float = typer.Option(1.0, "--burstiness", help="Gamma shape of arrival gaps: 1 is Poisson, < 1 "
                                     "burstier, > 1 more regular."),
    seed: int = typer.Option(0, "--seed", help="Seed of prompts and arrivals (recorded)."),
    goodput: Optional[str] = typer.Option(None, "--goodput", help="SLOs in ms for goodput: 'ttft:500 tpot:50' "
                                          "(keys ttft, tpot, e2e)."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="Replay a trace instead: JSONL (Mooncake: "
                                         "timestamp ms, input_length, output_length) or CSV (BurstGPT)."),
    time_scale: float = typer.Option(1.0, "--time-scale", help="Multiply the trace's time offsets (0.5: twice as "
                                     "fast)."),
    dataset: Optional[Path] = typer.Option(None, "--dataset", help="ShareGPT-style JSON of real prompts."),
    multi_turn: int = typer.Option(1, "--multi-turn", min=1, help="Turns per conversation (shared prefix)."),
    n_gpus: int = typer.Option(1, "--n-gpus", min=1, help="GPUs the server uses (for tok/s per GPU)."),
    precision: Optional[str] = typer.Option(None, "--precision", help="What the server runs (bf16, fp8, ...), as a "
                                            "label: a series of the Pareto plot and a key for compare --base."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="Slug of the server's GPU for the result path and "
                                      "comparisons (e.g. h100-sxm-80gb) when the server is on another machine."),
    name: str = typer.Option("serve-bench", "--name", help="Result-set name (as a suite name)."),
    out: Path = typer.Option(Path("results"), "--out", help="Root folder of result sets."),
    slo: Optional[str] = typer.Option(None, "--slo", help="Latency limits every point is checked against: "
                                      "'ttft_p99=500ms,tpot_p99=30ms' (ttft/tpot/e2e, any percentile; TTFT and E2E "
                                      "from the intended send time) or a preset: " + ", ".join(SLO_PRESETS) + "."),
    search: Optional[str] = typer.Option(None, "--search", help="Search the highest 'concurrency' or 'rate' that "
                                         "meets --slo (instead of --rate/--concurrency)."),
    search_start: float = typer.Option(1.0, "--search-start", help="The search's first load."),
    search_top: float = typer.Option(4096.0, "--search-top", help="The search's highest load."),
    search_resolution: float = typer.Option(0.1, "--search-resolution", help="Refine until the bracket is this "
                                            "share of the load (a concurrency: to whole requests at least)."),
    repeats: int = typer.Option(3, "--repeats", min=1, help="Refinements at the boundary: the capacity's interval "
                                "(3: [min, max] covering 75%; 5: 94%; 6 or more: 95%)."),
    client_procs: int = typer.Option(1, "--client-procs", min=1, help="Client processes (one event loop each) for "
                                     "loads one process cannot drive."),
    saturation_window: float = typer.Option(2.0, "--saturation-window", min=0.0, help="Seconds of a window: a point "
                                            "whose queue or TTFT grows over 3 windows in a row ends early, "
                                            "saturated (0: never)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the newest result set of --name: the points it "
                                "has are not run again."),
    budget: Optional[str] = typer.Option(None, "--budget", help="Start only points whose quoted time fits in what "
                                         "is left of this (e.g. 20m); --resume runs the rest."),
) -> None:
    console = SafeConsole()
    if not request_timeout > 0 or math.isinf(request_timeout):
        raise UserError(f"--request-timeout {request_timeout:g}: give the seconds one request may take, a number > 0 "
                        f"(default {DEFAULT_REQUEST_TIMEOUT_S:g})")
    done = api.serve_bench(
        url, model, rates=parse_points(rate, "rate", integer=False),
        concurrencies=parse_points(concurrency, "concurrency", integer=True), endpoint=endpoint, tokenizer=tokenizer,
        input_len=input_len, output_len=output_len, num_requests=num_requests, duration_s=duration,
        burstiness=burstiness, seed=seed, goodput=goodput, trace=trace, time_scale=time_scale, dataset=dataset,
        multi_turn=multi_turn, n_gpus=n_gpus, precision=precision, gpu=gpu, name=name, out=out, ui=_Points(console),
        request_timeout_s=request_timeout, slo=slo, search=search, search_start=search_start, search_top=search_top,
        search_resolution=search_resolution, search_repeats=repeats, client_processes=client_procs,
        saturation_window_s=saturation_window, resume=resume,
        budget_s=parse_budget(budget) if budget else None)
    rs, path, interrupted, shown = done.result_set, done.path, done.interrupted, redact(url)
    if rs.cases:
        print_terminal([results_table(rs.cases, f"serve-bench {model} at {shown}")], console)
        console.print(f"-> {path}")
    if interrupted:
        SafeConsole(stderr=True).print(f"interrupted: {len(rs.cases)} of {done.points} point(s) measured"
                                   + (f" and saved in {path} (not finished)" if rs.cases else "")
                                   + "; run serve-bench again for the rest", highlight=False, soft_wrap=True)
        raise typer.Exit(130)
    failed = [c for c in rs.cases if c.status != "ok"]
    if failed:
        SafeConsole(stderr=True).print(f"exit code 1: {len(failed)} of {len(rs.cases)} point(s) failed (the reasons "
                                   f"are in the table and in llmbench show {path})", highlight=False)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("serve-bench", help=HELP)(serve_bench)
