"""Serving metrics from known timestamps: the arithmetic of TTFT, ITL, TPOT, throughput, goodput."""

from __future__ import annotations

import math

import pytest

from llmbench.errors import UserError
from llmbench.serving.analysis import latency, meets, parse_slo, peak_in_flight, summarize
from llmbench.serving.records import NO_COUNT, RequestRecord, from_columns, to_columns


def rec(i: int, sent: float, chunks: list[float], end: float, tokens: int = NO_COUNT, asked: int = 3,
        scheduled: float | None = None, error: str | None = None) -> RequestRecord:
    return RequestRecord(index=i, scheduled_s=sent if scheduled is None else scheduled, requested_tokens=asked,
                         sent_s=sent, chunks_s=chunks, end_s=end, output_tokens=tokens, input_tokens=10,
                         error=error)


def test_one_request_figures() -> None:
    r = rec(0, 1.0, [1.1, 1.15, 1.25], 1.3, tokens=3, scheduled=0.9)
    lat = latency(r)
    assert lat.ttft_ms == pytest.approx(100)
    assert lat.itl_ms == pytest.approx([50, 100])
    assert lat.e2e_ms == pytest.approx(300)
    assert lat.tpot_ms == pytest.approx((300 - 100) / 2)
    assert r.queue_s == pytest.approx(0.1)


def test_tpot_uses_the_token_count_of_usage_not_the_chunks() -> None:
    # 2 chunks carried 5 tokens: TPOT is per token, ITL per chunk
    lat = latency(rec(0, 0.0, [0.1, 0.5], 0.5, tokens=5, asked=5))
    assert lat.tpot_ms == pytest.approx(400 / 4)
    assert lat.itl_ms == pytest.approx([400])


def test_summary_throughput_over_first_send_to_last_end_and_failures_excluded() -> None:
    records = [
        rec(0, 0.0, [0.1, 0.2, 0.3], 0.3, tokens=3),
        rec(1, 0.5, [0.7, 0.8, 0.9], 1.0, tokens=3),
        rec(2, 1.0, [1.1], 2.0, tokens=1, error="HTTP 500 from x: boom"),  # ends last: counts in the duration
    ]
    m, info = summarize(records, slo={"ttft_ms": 150}, n_gpus=2, asked_rate=2.0)
    assert info["duration_s"] == pytest.approx(2.0)
    assert m["request_throughput_per_s"].value == pytest.approx(2 / 2.0)
    assert m["output_tokens_per_s"].value == pytest.approx(6 / 2.0)
    assert m["output_tokens_per_s_per_gpu"].value == pytest.approx(6 / 2.0 / 2)
    assert m["failed_requests"].value == 1
    assert m["ttft_ms"].samples == pytest.approx([100, 200])
    assert m["achieved_request_rate_per_s"].value == pytest.approx(2 / 1.0)  # 3 sends over 1 s
    assert m["goodput_per_s"].value == pytest.approx(1 / 2.0)  # only request 0 has TTFT <= 150 ms
    assert info["first_errors"] == ["HTTP 500 from x: boom"]
    assert m["tokens_per_s_per_user"].samples == pytest.approx([1e3 / 100, 1e3 / 150], rel=1e-5)
    assert info["asked_request_rate_per_s"] == 2.0


def test_goodput_needs_every_slo() -> None:
    lat = latency(rec(0, 0.0, [0.1, 0.2, 0.3], 0.3, tokens=3))  # TTFT 100, TPOT 100, E2E 300
    assert meets(lat, {"ttft_ms": 100, "tpot_ms": 100})
    assert not meets(lat, {"ttft_ms": 100, "tpot_ms": 99})
    assert not meets(lat, {"e2e_ms": 299})
    one_token = latency(rec(0, 0.0, [0.1], 0.1, tokens=1, asked=1))
    assert one_token.tpot_ms is None and meets(one_token, {"tpot_ms": 1})


@pytest.mark.parametrize("text,want", [
    ("ttft:500 tpot:50", {"ttft_ms": 500, "tpot_ms": 50}),
    ("ttft:500,e2el:2000", {"ttft_ms": 500, "e2e_ms": 2000}),
    ("", {}),
    (None, {}),
])
def test_slo_text(text: str | None, want: dict[str, float]) -> None:
    assert parse_slo(text) == want


@pytest.mark.parametrize("text", ["ttft=500", "itl:5", "ttft:fast", "ttft:-1", "ttft:0", "ttft:inf"])
def test_malformed_slo_is_a_user_error(text: str) -> None:
    with pytest.raises(UserError, match="SLO"):
        parse_slo(text)


def test_records_survive_the_result_set_columns() -> None:
    records = [rec(0, 0.5, [0.6, 0.7], 0.8, tokens=2, asked=2, scheduled=0.25),
               rec(1, 1.0, [], 1.2, error="the stream ended before [DONE], after 0 chunks")]
    back = from_columns(to_columns(records))
    assert [latency(r).ttft_ms for r in back[:1]] == pytest.approx([100])
    assert back[0].queue_s == pytest.approx(0.25)
    assert back[1].error == records[1].error and back[1].output_tokens == NO_COUNT
    m1, _ = summarize(records)
    m2, _ = summarize(back)
    assert m1["e2e_ms"].value == pytest.approx(m2["e2e_ms"].value)


def test_never_sent_requests_keep_their_place() -> None:
    r = RequestRecord(index=0, scheduled_s=1.0, requested_tokens=4)
    back = from_columns(to_columns([r]))[0]
    assert math.isnan(back.sent_s) and math.isnan(back.end_s)


def test_peak_in_flight_from_the_records() -> None:
    records = [rec(0, 0.0, [0.1], 1.0), rec(1, 0.5, [0.6], 1.5), rec(2, 1.0, [1.1], 2.0), rec(3, 2.5, [2.6], 3.0)]
    assert peak_in_flight(records) == 2  # an end and a send at the same instant do not overlap


def test_a_large_itl_distribution_keeps_exact_percentiles_and_every_sample() -> None:
    chunks = [0.001 * i for i in range(1, 20002)]
    m, _ = summarize([rec(0, 0.0, chunks, chunks[-1], tokens=len(chunks), asked=len(chunks))])
    itl = m["itl_ms"]
    assert itl.stats.n == 20000 and len(itl.samples) == 20000
    assert itl.value == pytest.approx(1.0)


def test_pareto_points_of_a_sweep() -> None:
    from llmbench.results import CaseResult, MetricResult
    from llmbench.serving.analysis import pareto_points

    def case(conc: int, user: float, gpu: float, status: str = "ok") -> CaseResult:
        return CaseResult(id=f"serving/{conc}", scenario="serving", status=status,
                          params={"preset": "tiny-llama", "precision": "bf16", "concurrency": conc},
                          metrics={"tokens_per_s_per_user": MetricResult.single("tokens_per_s_per_user", user),
                                   "output_tokens_per_s_per_gpu": MetricResult.single(
                                       "output_tokens_per_s_per_gpu", gpu)})

    cases = [case(8, 40.0, 320.0), case(1, 100.0, 100.0), case(64, 5.0, 300.0, "failed")]
    pts = pareto_points(cases)
    assert pts == {"preset=tiny-llama precision=bf16": [(40.0, 320.0, "concurrency 8"),
                                                        (100.0, 100.0, "concurrency 1")]}


def test_chunks_read_in_bursts_are_flagged() -> None:
    burst = rec(0, 0.0, [0.07] * 8, 0.071, tokens=8, asked=8)  # every chunk in one read
    m, _ = summarize([burst])
    assert any("arrived in the same read" in f for f in m["itl_ms"].flags)
    steady = rec(0, 0.0, [0.01 * i for i in range(1, 9)], 0.09, tokens=8, asked=8)
    m, _ = summarize([steady])
    assert not m["itl_ms"].flags
