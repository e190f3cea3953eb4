"""Coalesced reads on the keep-alive C core (engine/_churn_keepalive.c): in the closed model run
by time it waits between reads, on a socket and not a timer, so that one wake-up reads several
responses, times each by the kernel's receive timestamp, and says in the result how long a
connection waited before its next request. Where it does not apply (a request count, the open
model, --coalesce 0, the Python path), nothing changes and nothing is said."""
from __future__ import annotations

import os
from typing import Any

import pytest

from helpers.engine_servers import delayed, serve
from toolbench.engine import churn_native, coordinator
from toolbench.engine.churn_native import PATH_ENV
from toolbench.engine.options import DEFAULT_COALESCE_S, EngineError, EngineOptions, parse_duration, validate
from toolbench.engine.result import COALESCE_NOTE, run_result
from toolbench.record.schema import RunResult, Status

DELAY_MS = 40.0


@pytest.fixture
def c_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PATH_ENV, raising=False)
    if churn_native.keepalive_path() != "C":
        if os.environ.get("TOOLBENCH_REQUIRE_C_PATH"):
            pytest.fail("the engine's C path is not built, and TOOLBENCH_REQUIRE_C_PATH is set")
        pytest.skip("the engine's C path (toolbench.engine._churn) is not built here")


def run(url: str, **kw: Any) -> RunResult:
    return run_result(coordinator.run(EngineOptions(url=url + "/", **{"workers": 1, **kw})))


def waited_us(result: RunResult) -> float | None:
    """The mean wait the coalescing note gives, or None without the note."""
    note = next((n for n in result.measurement.notes if n.startswith(COALESCE_NOTE)), None)
    if note is None:
        return None
    return float(note.rsplit("on average ", 1)[1].split(" us", 1)[0])


@pytest.mark.integration
@pytest.mark.usefixtures("c_path")
def test_a_response_is_timed_when_it_arrived_not_when_the_engine_read_it() -> None:
    """Against a server that answers after 40 ms, 16 connections: a response every 2.5 ms, and
    each wait for the response to the request sent a quarter of the span in flight (about 10 ms)
    after the oldest. Many responses wait in their socket before the engine reads them, over 1 ms
    on average; their latency stays what it is without coalescing, where a clock read by the
    engine would add that wait to it."""
    with serve(delayed(DELAY_MS / 1000)) as (url, _):
        plain = run(url, connections=16, duration_s=2.0, coalesce_s=0.0)
        result = run(url, connections=16, duration_s=2.0, coalesce_s=0.01)
    assert result.outcome.status is plain.outcome.status is Status.OK
    waited = waited_us(result)
    assert waited is not None and waited >= 1000, result.measurement.notes
    assert waited_us(plain) is None
    latency = result.measurement.latency
    assert latency.min_ms is not None and latency.min_ms >= DELAY_MS
    assert latency.mean_ms is not None and plain.measurement.latency.mean_ms is not None
    assert latency.mean_ms - plain.measurement.latency.mean_ms <= waited / 2 / 1000, (latency, waited)
    counts = result.measurement.counts
    assert counts.requests_ok == counts.requests_total > 0


@pytest.mark.usefixtures("c_path")
@pytest.mark.parametrize("kw", [
    {"coalesce_s": 0.0, "duration_s": 0.5},  # asked for none (the default)
    {"requests": 200, "coalesce_s": 0.0002},  # a request count: Python hands out each next request
    {"rate_rps": 200.0, "duration_s": 0.5, "coalesce_s": 0.0002},  # the open model: each send at its time
])
def test_where_it_does_not_apply_nothing_waits_and_nothing_is_said(nginx, kw: dict[str, Any]) -> None:
    result = run(nginx.base_url.rstrip("/"), connections=4, **kw)
    assert result.outcome.status is Status.OK and result.measurement.counts.requests_ok > 0
    assert waited_us(result) is None


@pytest.mark.usefixtures("c_path")
def test_asked_for_a_timed_keepalive_run_coalesces_and_says_so_and_not_by_default(nginx) -> None:
    result = run(nginx.base_url.rstrip("/"), connections=8, duration_s=1.0, coalesce_s=0.0002)
    assert result.outcome.status is Status.OK
    waited = waited_us(result)
    assert waited is not None and waited >= 0
    assert "--coalesce 200us" in next(n for n in result.measurement.notes if n.startswith(COALESCE_NOTE))
    assert DEFAULT_COALESCE_S == 0.0
    assert waited_us(run(nginx.base_url.rstrip("/"), connections=8, duration_s=0.5)) is None


def test_the_wait_is_a_duration_of_at_most_10ms() -> None:
    assert parse_duration("200us") == pytest.approx(0.0002)
    validate(EngineOptions(url="http://127.0.0.1:1/", connections=1, duration_s=1.0, coalesce_s=0.01))
    with pytest.raises(EngineError, match=r"--coalesce must be between 0 and 10ms, got 0.02s"):
        validate(EngineOptions(url="http://127.0.0.1:1/", connections=1, duration_s=1.0, coalesce_s=0.02))
    with pytest.raises(EngineError, match="--coalesce must be between"):
        validate(EngineOptions(url="http://127.0.0.1:1/", connections=1, duration_s=1.0, coalesce_s=-0.001))
