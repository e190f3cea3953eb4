"""The engine against a real nginx on loopback, alone and through the runner."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO
from toolbench.engine import coordinator
from toolbench.engine.options import EngineOptions
from toolbench.engine.result import run_result
from toolbench.record import histogram, store
from toolbench.record.schema import RunResult, Status
from toolbench.run import runner
from toolbench.scenario import read as scenario
from toolbench.servers.process import RunningTarget

pytestmark = pytest.mark.integration


def run_engine(url: str, **kw: Any) -> RunResult:
    return run_result(coordinator.run(EngineOptions(url=url, **{"connections": 10, **kw})))


def connections_opened(result: RunResult) -> int:
    opened = result.measurement.counts.connections_opened
    assert opened is not None
    return opened


def test_keepalive_on(nginx: RunningTarget) -> None:
    result = run_engine(nginx.base_url + "/", duration_s=1.0, workers=2)
    assert result.outcome.status is Status.OK, result.outcome.error
    counts = result.measurement.counts
    assert counts.requests_total and counts.requests_total > 1000
    assert counts.requests_ok == counts.requests_total and counts.requests_failed == 0
    assert counts.status_codes == {200: counts.requests_total}
    assert histogram.decode(result.measurement.histogram).get_total_count() == counts.requests_total
    assert connections_opened(result) == 10
    assert not any(n.startswith("engine_failures") for n in result.all_notes)  # only failures get a note
    assert result.measurement.transfer.received_bytes >= counts.requests_total * (13 + 100)
    assert result.measurement.latency.percentiles.p50_ms < result.measurement.latency.percentiles.p99_ms + 1e-9
    assert result.measurement.series and sum(s.requests for s in result.measurement.series) == counts.requests_total
    assert result.cost is not None and result.cost.cpu_us_per_request


def test_keepalive_off(nginx: RunningTarget) -> None:
    result = run_engine(nginx.base_url + "/", duration_s=1.0, workers=1, keepalive=False)
    assert result.outcome.status is Status.OK, result.outcome.error
    total = result.measurement.counts.requests_total
    assert total and total > 200 and result.measurement.counts.requests_failed == 0
    # One connection per request: those still in flight at the stop are opened but not counted.
    assert total <= connections_opened(result) <= total + 10
    lat = result.measurement.latency
    assert lat.connect_mean_ms is not None and lat.connect_mean_ms > 0
    # A new connection per request: latency is connect, then the wait for the first byte.
    assert lat.ttfb_mean_ms is not None and lat.mean_ms is not None
    assert lat.mean_ms == pytest.approx(lat.connect_mean_ms + lat.ttfb_mean_ms, rel=0.1, abs=0.02)


def test_head_and_404(nginx: RunningTarget) -> None:
    result = run_engine(nginx.base_url + "/", requests=200, method="HEAD", workers=1)
    assert result.measurement.counts.requests_ok == 200 and connections_opened(result) == 10
    assert result.measurement.transfer.received_bytes < 200 * 400  # headers only
    result = run_engine(nginx.base_url + "/nope", requests=100, workers=1)
    assert result.measurement.counts.status_codes == {404: 100} and result.measurement.counts.failures.http_4xx == 100
    assert result.outcome.status is Status.OK  # a run of 404s measured fine; the runner judges it


def test_the_engine_runs_in_the_quickstart_scenario(tmp_path: Path) -> None:
    """The quickstart's own target, request and matrix shape, with the engine in the tool
    list and a shorter run."""
    text = (REPO / "scenarios" / "quickstart.yaml").read_text().split("\nprofiles:")[0]  # the keys as written
    text = re.sub(r"tool: \[[^\]]*\]", "tool: [engine]", text)
    text = re.sub(r"concurrency: \[[^\]]*\]", "concurrency: [10]", text)
    text = re.sub(r"duration: \S+", "duration: 1s", text)
    text = re.sub(r"cooldown: \S+", "cooldown: 0s", text)
    text = re.sub(r"repeat: \S+", "repeat: 1", text)
    path = tmp_path / "quickstart-engine.yaml"
    path.write_text(text)
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    results = {r.identity.cell_id: r for r in store.RunDir.open(summary.run_dir).results()}
    assert set(results) == {"engine-c10-ka-rep1", "engine-c10-close-rep1"}
    for result in results.values():
        assert result.outcome.status is Status.OK, result.outcome.error
        assert result.identity.tool == "engine" and result.identity.tool_version
        assert result.measurement.counts.requests_ok and result.measurement.counts.requests_ok > 200
        assert result.measurement.histogram and result.measurement.latency.percentiles.p99_ms
        assert result.cost is not None and result.cost.cpu_user_s is not None
