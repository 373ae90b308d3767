"""Load shapes: arrival times (Poisson, gamma burstiness, all at once), trace replay, duration cuts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from llmbench.errors import UserError
from llmbench.serving.fake_server import running
from llmbench.serving.load import Schedule, arrival_offsets
from llmbench.serving.trace import read_trace
from tests.serving_helpers import load, sessions


def test_poisson_arrivals_have_the_rate_asked_and_a_fixed_seed() -> None:
    off = arrival_offsets(20001, 8.0, seed=3)
    gaps = np.diff(off)
    assert off[0] == 0.0
    assert gaps.mean() == pytest.approx(1 / 8.0, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.05)  # exponential: CV 1
    assert arrival_offsets(50, 8.0, seed=3) == off[:50]
    assert arrival_offsets(50, 8.0, seed=4) != off[:50]


@pytest.mark.parametrize("burstiness", [0.25, 4.0])
def test_burstiness_is_the_gamma_shape(burstiness: float) -> None:
    gaps = np.diff(arrival_offsets(20001, 5.0, burstiness, seed=0))
    assert gaps.mean() == pytest.approx(1 / 5.0, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(1 / math.sqrt(burstiness), rel=0.08)


def test_infinite_rate_sends_everything_at_once() -> None:
    assert arrival_offsets(5, math.inf) == (0.0,) * 5


def test_a_schedule_is_rate_or_concurrency() -> None:
    with pytest.raises(ValueError, match="not both"):
        Schedule(offsets_s=(0.0,), concurrency=2)
    with pytest.raises(ValueError):
        Schedule()


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_a_mooncake_trace_is_replayed_in_time_order_and_scaled(tmp_path: Path) -> None:
    p = write_jsonl(tmp_path / "t.jsonl", [
        {"timestamp": 3000, "input_length": 30, "output_length": 3, "hash_ids": [1]},
        {"timestamp": 1000, "input_length": 10, "output_length": 1},
        {"timestamp": 2000, "input_length": 20, "output_length": 2},
    ])
    rows = read_trace(p)
    assert [(r.offset_s, r.input_len, r.output_len) for r in rows] == [(0.0, 10, 1), (1.0, 20, 2), (2.0, 30, 3)]
    assert [r.offset_s for r in read_trace(p, time_scale=0.5)] == [0.0, 0.5, 1.0]
    assert len(read_trace(p, limit=2)) == 2


def test_a_burstgpt_csv_trace(tmp_path: Path) -> None:
    p = tmp_path / "b.csv"
    p.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                 "5.5,ChatGPT,100,20,120,Conversation log\n4.0,GPT-4,50,0,50,Conversation log\n"
                 "4.5,GPT-4,60,10,70,Conversation log\n")
    rows = read_trace(p)
    assert [(r.offset_s, r.input_len, r.output_len) for r in rows] == [(0.0, 60, 10), (1.0, 100, 20)]  # 0 out: failed


@pytest.mark.parametrize("name,text,needle", [
    ("bad.jsonl", "{\"timestamp\": 1}\n", r"bad.jsonl:1: a trace line needs timestamp \(ms\)"),
    ("bad.csv", "a,b\n1,2\n", "needs the columns"),
    ("bad.txt", "", "unknown format"),
    ("none.jsonl", None, "does not exist"),
])
def test_a_bad_trace_is_one_clear_message(tmp_path: Path, name: str, text: str | None, needle: str) -> None:
    p = tmp_path / name
    if text is not None:
        p.write_text(text)
    with pytest.raises(UserError, match=needle):
        read_trace(p)


def test_a_replayed_trace_keeps_its_timing() -> None:
    offsets = (0.0, 0.2, 0.4)
    with running() as url:
        res = load(url, sessions(3, 2), Schedule(offsets_s=offsets))
    assert [r.scheduled_s for r in res.records] == list(offsets)
    assert all(r.sent_s >= r.scheduled_s for r in res.records)  # none early, however late the first one went
    assert [r.sent_s for r in res.records] == sorted(r.sent_s for r in res.records)  # in the trace's order


def test_duration_stops_new_requests() -> None:
    with running() as url:
        res = load(url, sessions(4, 2), Schedule(offsets_s=(0.0, 0.1, 5.0, 6.0), duration_s=1.0))
    assert len(res.records) == 2 and res.not_started == 2


def test_a_ctrl_c_while_the_client_is_built_is_held_until_it_is_built() -> None:
    """SIGINT inside the deferred block reaches the handler in place only once the block is done (a
    half-built aiohttp connector printed a traceback at exit); outside it, nothing changes."""
    import os
    import signal

    from llmbench.serving.load import sigint_deferred

    steps: list[str] = []
    # Python's own handler, as in a process started from a terminal (one started in the background by a
    # shell without job control inherits SIGINT ignored, and then a deferred Ctrl-C stays ignored)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), sigint_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            steps.append("built after the signal")
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert steps == ["built after the signal"]
    seen: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        with sigint_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            assert seen == []
        assert seen == [signal.SIGINT]  # handed to the handler that was in place (asyncio's, in a run)
    finally:
        signal.signal(signal.SIGINT, old)
