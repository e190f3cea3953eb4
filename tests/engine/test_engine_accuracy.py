"""The engine measures what happens: a fixed server delay, a stall under an open
model (corrected vs uncorrected), one connection per request without keep-alive."""
from __future__ import annotations

from typing import Any

import pytest

from engine_paths import PATHS, use_path
from helpers.engine_servers import OK, delayed, responder, serve, stalling
from toolbench.engine import coordinator
from toolbench.engine.options import EngineOptions
from toolbench.engine.result import run_result
from toolbench.record import histogram
from toolbench.record.schema import LoadModel, RunResult, Status

# Timing-sensitive: real delays and stalls measured on a shared machine, so not in the fast tier.
# Each runs on both connection paths (C and Python: engine_paths.py).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("engine_path")]


@pytest.fixture(params=PATHS)
def engine_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test runs on each connection path (engine_paths.py); the value says which."""
    return use_path(str(request.param), monkeypatch)


def run_engine(url: str, **kw: Any) -> RunResult:
    opts = EngineOptions(url=url + "/", **{"connections": 2, "workers": 1, **kw})
    return run_result(coordinator.run(opts))


def test_p50_is_the_server_delay_within_1ms() -> None:
    delay_ms = 20.0
    with serve(delayed(delay_ms / 1000)) as (url, _):
        result = run_engine(url, connections=4, duration_s=1.5)
    assert result.outcome.status is Status.OK
    p50 = result.measurement.latency.percentiles.p50_ms
    assert p50 is not None and abs(p50 - delay_ms) <= 1.0, p50
    # Every request is timed: the histogram holds every response.
    total = histogram.decode(result.measurement.histogram).get_total_count()
    assert total == result.measurement.counts.requests_ok == result.measurement.counts.requests_total
    assert 4 * 1.5 * 1000 / delay_ms * 0.6 <= total <= 4 * 1.5 * 1000 / delay_ms * 1.05
    assert result.measurement.latency.min_ms >= delay_ms
    assert result.measurement.latency.ttfb_mean_ms == pytest.approx(result.measurement.latency.mean_ms, abs=0.5)


def test_open_model_corrected_p99_shows_a_stall_that_uncorrected_hides() -> None:
    # 200 requests/s over 2 connections for 3 s; the server stalls 1 s after 1 s.
    with serve(stalling(after_s=1.0, stall_s=1.0)) as (url, _):
        result = run_engine(url, connections=2, duration_s=3.0, rate_rps=200.0)
    assert result.outcome.status is Status.OK
    assert result.identity.model is LoadModel.OPEN and result.identity.rate_rps == 200.0
    total = result.measurement.counts.requests_total
    assert 540 <= total <= 610, total  # the schedule is kept: the backlog is sent after the stall
    corrected = result.measurement.latency.percentiles.p99_ms
    uncorrected = result.measurement.latency_uncorrected
    assert uncorrected is not None and result.measurement.histogram_uncorrected is not None
    # About a third of the requests were due during the stall: their corrected latency
    # runs from ~1 s down to 0. Only the 2 requests actually in flight waited that long.
    assert corrected is not None and corrected >= 500.0, corrected
    assert uncorrected.percentiles.p99_ms is not None and uncorrected.percentiles.p99_ms < 500.0, uncorrected
    assert uncorrected.max_ms is not None and uncorrected.max_ms >= 900.0  # the stall is there, hidden from p99
    assert result.measurement.latency.percentiles.p90_ms >= 100.0
    assert histogram.decode(result.measurement.histogram_uncorrected).get_total_count() == result.measurement.counts.requests_ok


def test_open_model_keeps_the_rate_when_the_server_is_fast() -> None:
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        result = run_engine(url, connections=4, duration_s=1.0, rate_rps=300.0)
    assert 280 <= result.measurement.counts.requests_total <= 310
    assert result.measurement.rates.rps == pytest.approx(300.0, rel=0.05)
    assert result.measurement.latency.percentiles.p99_ms < 50.0


def test_keepalive_off_opens_one_connection_per_request() -> None:
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        result = run_engine(url, connections=3, requests=150, keepalive=False)
    assert result.outcome.status is Status.OK
    assert result.measurement.counts.requests_ok == 150
    used = [n for n in stats.requests_per_connection if n]
    assert len(used) == 150 and set(used) == {1}, used  # plus one probe connection, with no request
    assert stats.connections == 151
    assert all(b"connection: close" in raw.lower() for raw in stats.requests)
    assert result.measurement.counts.connections_opened == 150
    assert result.measurement.latency.connect_mean_ms is not None


def test_keepalive_on_reuses_the_connections() -> None:
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        result = run_engine(url, connections=3, requests=150)
    assert result.measurement.counts.requests_ok == 150
    assert stats.connections == 3 and sum(stats.requests_per_connection) == 150


def test_request_count_is_exact_across_workers_and_histograms_merge() -> None:
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        result = run_engine(url, connections=5, requests=1001, workers=2)
    assert result.identity.params["workers"] == "2"
    assert result.measurement.counts.requests_total == result.measurement.counts.requests_ok == 1001 == len(stats.requests)
    assert histogram.decode(result.measurement.histogram).get_total_count() == 1001
    assert sum(s.requests for s in result.measurement.series) == 1001


def test_warmup_is_excluded() -> None:
    with serve(delayed(0.01)) as (url, stats):
        result = run_engine(url, connections=2, duration_s=1.0, warmup_s=0.5)
    served = len(stats.requests)
    assert result.measurement.counts.requests_total < served * 0.8  # the warm-up's ~100 requests are not counted
    assert result.measurement.timing.duration_s == pytest.approx(1.0, abs=0.05)
    assert result.measurement.counts.requests_total == pytest.approx(200, rel=0.25)
