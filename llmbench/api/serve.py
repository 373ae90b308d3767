"""`serve_bench`: a running OpenAI-compatible server loaded at each point of a sweep, one case a point,
into a result set that `compare` and `report` read."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from llmbench.api.checks import check_out_dir
from llmbench.errors import UserError
from llmbench.harness.ui import UI
from llmbench.ids import PATH_NAME_FORM, is_path_name
from llmbench.redact import redact
from llmbench.results import ResultSet, latest_result, load
from llmbench.serving.client import DEFAULT_REQUEST_TIMEOUT_S


@dataclass(frozen=True)
class ServeBenchRun:
    """The sweep's result set, where it was written (None: no point was measured), whether an interrupt
    cut it, and how many points were asked for."""

    result_set: ResultSet
    path: Path | None
    interrupted: bool
    points: int


def _params(base: dict[str, Any], **point: Any) -> Any:
    from llmbench.scenarios.serving import ServingParams

    try:
        return ServingParams.model_validate({**base, **point})
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UserError(redact(f"{where + ': ' if where else ''}{err['msg'].removeprefix('Value error, ')}")) from None


def serve_bench(url: str, model: str, *, rates: list[float] | None = None, concurrencies: list[float] | None = None,
                endpoint: str = "completions", tokenizer: str | None = None, input_len: int = 128,
                output_len: int = 128, num_requests: int = 100, duration_s: float | None = None,
                burstiness: float = 1.0, seed: int = 0, goodput: str | None = None, trace: Path | None = None,
                time_scale: float = 1.0, dataset: Path | None = None, multi_turn: int = 1, n_gpus: int = 1,
                precision: str | None = None, gpu: str | None = None, name: str = "serve-bench",
                out: Path = Path("results"), ui: UI | None = None,
                request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S, slo: str | None = None,
                search: str | None = None, search_start: float = 1.0, search_top: float = 4096.0,
                search_repeats: int = 3, search_resolution: float = 0.1, client_processes: int = 1,
                saturation_window_s: float = 2.0,
                resume: bool = False, budget_s: float | None = None, timeout_s: float | None = None) -> ServeBenchRun:
    """Sweep the server at `url` over `rates` (req/s) or `concurrencies`, replay `trace`, or `search` the
    highest concurrency or rate that meets `slo` (percentile limits or a preset): one serving case a point
    (one case for a search), run by the runner every suite runs through (each case in its own process,
    the result set OUT/<gpu-slug>/<name>-<UTC>.json written after each, `resume`, `budget_s`). The server
    is checked first (GET /v1/models): one that is not there or does not serve `model` is a UserError
    before anything slow (the tokenizer) and nothing is written; at a later point, a failed point. A
    request that takes longer than `request_timeout_s` is a failed request (reason "timeout"). Ctrl-C or
    SIGTERM ends the sweep with the points done saved (`interrupted`)."""
    from llmbench.api.run import Selection
    from llmbench.api.run import run_suite as run_selection
    from llmbench.serving.analysis import parse_slo
    from llmbench.serving.slo import parse_limits

    if sum(x is not None for x in (rates, concurrencies, search)) > 1:
        raise UserError("give one of --rate, --concurrency or --search, not both (one sweep at a time)")
    if rates is None and concurrencies is None and trace is None and search is None:
        raise UserError("give --rate 1,2,4 or --concurrency 1,4,16, --search concurrency|rate with --slo, "
                        "or --trace FILE")
    if search is not None and search not in ("concurrency", "rate"):
        raise UserError(f"--search {search!r}: give concurrency or rate")
    if search is not None and slo is None:
        raise UserError("--search needs the SLO it searches under: --slo 'ttft_p99=500ms,tpot_p99=30ms' or a "
                        "preset such as mlperf-llama3.1-8b-interactive")
    parse_slo(goodput)
    if slo is not None:
        parse_limits(slo)
    for option, value in (("--name", name), ("--gpu", gpu)):
        if value is not None and not is_path_name(value):
            raise UserError(f"{option} {value!r}: it becomes part of a file path; give {PATH_NAME_FORM}")
    scheme_host = urlsplit(url)
    if scheme_host.scheme not in ("http", "https") or not scheme_host.hostname:
        raise UserError(f"--url {redact(url)!r}: give the server's base URL, http(s)://HOST[:PORT], "
                        "e.g. http://127.0.0.1:8000")
    check_out_dir(out)
    try:  # imported, not looked up: an install that is there but broken is as good as none
        import aiohttp  # noqa: F401
    except ImportError:
        raise UserError("serve-bench needs aiohttp (its HTTP client): pip install 'llmbench[serving]'") from None
    base = dict(model=model, endpoint=endpoint, tokenizer=tokenizer or model, input_len=input_len,
                output_len=output_len, num_requests=num_requests, duration_s=duration_s, burstiness=burstiness,
                seed=seed, slo=goodput, trace=str(trace) if trace else None, time_scale=time_scale,
                dataset=str(dataset) if dataset else None, multi_turn=multi_turn, precision=precision,
                request_timeout_s=request_timeout_s, limits=slo, client_processes=client_processes,
                saturation_window_s=saturation_window_s)
    if search is not None:
        base.update(search=search, search_start=search_start, search_top=search_top, search_repeats=search_repeats,
                    search_resolution=search_resolution)
    base = {k: v for k, v in base.items() if v is not None}
    from llmbench.engines.url import UrlOptions
    from llmbench.measure.timing import StopRule
    from llmbench.suite import CaseSpec, Suite

    # the serving case's engine: a server running at the URL
    server = UrlOptions.model_validate({"name": "url", "url": url, "n_gpus": n_gpus})
    points = ([_params(base, rate=r) for r in rates] if rates is not None else
              [_params(base, concurrency=int(c)) for c in concurrencies] if concurrencies is not None
              else [_params(base)])
    reach_server(url, model, request_timeout_s)  # a closed port or a wrong model: one line, before anything slow
    from llmbench.serving.prompts import load_tokenizer

    load_tokenizer(base["tokenizer"])  # a bad tokenizer is one message before anything is sent
    rule = StopRule.model_validate({} if timeout_s is None else {"timeout_s": timeout_s})
    cases = [CaseSpec("serving", p, rule, origin=f"point {i}", engine=server) for i, p in enumerate(points, 1)]
    if timeout_s is None:  # a search runs many points in its one case: its process may take the search's time
        cases = [c.with_settings(timeout_s=max(rule.timeout_s, 2 * c.scenario_obj().estimate_s(c.params, rule)))
                 if getattr(c.params, "search", None) is not None else c for c in cases]
    shown = redact(url)  # the URL as written and printed: its credentials are used, never kept
    suite = Suite(name=name, description=f"serve-bench against {shown} ({model})", path=Path("serve-bench"),
                  cases=cases)
    interrupted, stop = False, []

    def interrupt(signum: int, frame: object) -> None:
        stop.append(signum)
        raise KeyboardInterrupt

    before = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    path: Path | None = None
    try:
        done = run_selection(Selection(suite, cases), out=out, resume=resume, budget_s=budget_s, ui=ui or UI(),
                             named_gpu=_named_gpu(gpu))
        path = done.path
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the points done are saved, the rest are not run
        interrupted = True
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    if path is None:
        from llmbench.hardware.fingerprint import local_slug

        path = latest_result(out, gpu or local_slug(None, False), name)
    rs = load(path) if path is not None else ResultSet(suite=name, description=suite.description)
    return ServeBenchRun(rs, path if rs.cases else None, interrupted, len(points))


def _named_gpu(gpu: str | None) -> dict[str, Any] | None:
    """The server's GPU as the result set names it, where the user named it with --gpu."""
    return {"name": f"{gpu} (named with --gpu: the server's GPU)", "slug": gpu, "count": None} if gpu else None


def reach_server(url: str, model: str, timeout_s: float = 30.0) -> None:
    """GET /v1/models of the server: a UserError naming the URL and why (a closed port: 'connection
    refused') where it is not there or does not serve `model`."""
    from llmbench.serving.bench import ServerUnusable, served_models
    from llmbench.serving.client import Endpoint
    from llmbench.serving.load import run_async

    try:
        run_async(served_models(Endpoint(url, "completions", model, min(timeout_s, 30.0))))
    except ServerUnusable as e:
        raise UserError(redact(str(e))) from None
