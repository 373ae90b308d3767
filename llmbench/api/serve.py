"""`serve_bench`: a running OpenAI-compatible server loaded at each point of a sweep, one case a point,
into a result set that `compare` and `report` read."""

from __future__ import annotations

import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from llmbench import __version__
from llmbench.api.checks import check_out_dir
from llmbench.errors import UserError
from llmbench.harness.ui import UI
from llmbench.ids import PATH_NAME_FORM, case_id, is_path_name
from llmbench.redact import redact, redact_value
from llmbench.results import CaseResult, ResultSet, save, save_new, utc_now
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


def _env(gpu: str | None) -> dict[str, Any]:
    """This machine's fingerprint; with --gpu, the server's GPU named by the user instead."""
    from llmbench.harness.isolation import child_env, fingerprint

    env = fingerprint(child_env(None))
    if gpu:
        env["gpu"] = {"name": f"{gpu} (named with --gpu: the server's GPU)", "slug": gpu, "count": None}
    return env


def serve_bench(url: str, model: str, *, rates: list[float] | None = None, concurrencies: list[float] | None = None,
                endpoint: str = "completions", tokenizer: str | None = None, input_len: int = 128,
                output_len: int = 128, num_requests: int = 100, duration_s: float | None = None,
                burstiness: float = 1.0, seed: int = 0, goodput: str | None = None, trace: Path | None = None,
                time_scale: float = 1.0, dataset: Path | None = None, multi_turn: int = 1, n_gpus: int = 1,
                precision: str | None = None, gpu: str | None = None, name: str = "serve-bench",
                out: Path = Path("results"), ui: UI | None = None,
                request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> ServeBenchRun:
    """Sweep the server at `url` over `rates` (req/s) or `concurrencies`, or replay `trace`, writing
    OUT/<gpu-slug>/<name>-<UTC>.json after each point. A server unusable at the first point is a
    UserError (nothing written); at a later one, a failed point. A request that takes longer than
    `request_timeout_s` is a failed request (reason "timeout"). Ctrl-C or SIGTERM ends the sweep with
    the points done saved (`interrupted`)."""
    from llmbench.hardware.fingerprint import llmbench_info
    from llmbench.scenarios.serving import measure
    from llmbench.serving.analysis import parse_slo
    from llmbench.serving.bench import ServerUnusable

    ui = ui or UI()
    if rates is not None and concurrencies is not None:
        raise UserError("give --rate or --concurrency, not both (one sweep at a time)")
    if rates is None and concurrencies is None and trace is None:
        raise UserError("give --rate 1,2,4 or --concurrency 1,4,16 (or --trace FILE)")
    parse_slo(goodput)
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
                request_timeout_s=request_timeout_s)
    from llmbench.engines.url import RunningServer, UrlOptions
    from llmbench.measure.timing import StopRule
    from llmbench.suite import CaseSpec

    # the serving case's engine: a server running at the URL
    server = UrlOptions.model_validate({"name": "url", "url": url, "n_gpus": n_gpus})
    points = ([_params(base, rate=r) for r in rates] if rates is not None else
              [_params(base, concurrency=int(c)) for c in concurrencies] if concurrencies is not None
              else [_params(base)])
    from llmbench.serving.prompts import load_tokenizer

    load_tokenizer(base["tokenizer"])  # a bad tokenizer is one message before anything is sent
    env = _env(gpu)
    shown = redact(url)  # the URL as written and printed: its credentials are used, never kept
    rs = ResultSet(suite=name, description=f"serve-bench against {shown} ({model})",
                   llmbench={**llmbench_info(), "version": __version__}, env=env)
    path: Path | None = None  # named at its first write: a name no other writer has
    interrupted, stop = False, []  # stop: a signal came, even where its interrupt was lost (in a finalizer)

    def interrupt(signum: int, frame: object) -> None:
        stop.append(signum)
        raise KeyboardInterrupt

    def unraisable(u: Any) -> None:  # the interrupt a finalizer swallowed: `stop` has it, no traceback
        if not isinstance(u.exc_value, KeyboardInterrupt):
            sys.__unraisablehook__(u)

    before = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    sys.unraisablehook = unraisable
    try:
        for i, p in enumerate(points, 1):
            if stop:
                raise KeyboardInterrupt
            # the case id is of the URL without credentials (Scenario.record hides them)
            params = CaseSpec("serving", p, StopRule.model_validate({}), engine=server).params_dict
            info: dict[str, Any] = {}
            started = utc_now()
            ui.line(f"point {i}/{len(points)}: {'rate ' + str(params['rate']) if p.rate else ''}"
                    f"{'concurrency ' + str(p.concurrency) if p.concurrency else ''}{'trace' if p.trace else ''}")
            try:
                ended: dict[str, Any] = {"status": "ok", "timer": "perf_counter",
                                         "metrics": measure(p, info, RunningServer(server))}
            except ServerUnusable as e:
                if i == 1:  # the URL or --model the user gave: nothing was measured, nothing is written
                    raise UserError(redact(str(e))) from None
                ended = {"status": "failed", "reason": redact(str(e))}  # the server went away
            except (RuntimeError, OSError) as e:
                ended = {"status": "failed", "reason": redact(f"{type(e).__name__}: {e}".splitlines()[0][:500])}
            rs.upsert(CaseResult(id=case_id("serving", params), scenario="serving", params=params, started_at=started,
                                 info=redact_value(info), **ended))
            if path is None:  # finished_at stays empty until the last point: a cut sweep is not a finished set
                path = save_new(rs, out, env["gpu"]["slug"], name)
            else:
                save(rs, path)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the points done are saved, the rest are not run
        interrupted = True
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        sys.unraisablehook = sys.__unraisablehook__
    rs.finished_at = None if interrupted else utc_now()
    if path is not None:
        save(rs, path)
    return ServeBenchRun(rs, path, interrupted, len(points))
