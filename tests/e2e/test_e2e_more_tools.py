"""wrk, hey, h2load and httperf driven by the runner against the bundled nginx on loopback,
1 s a cell: each tool's supported cells end ok with every request answered 200."""
import shutil

import pytest

from helpers.more_tools import SCENARIO
from toolbench.contract import registry
from toolbench.contract.adapter import Found, Missing
from toolbench.hosts.local import LocalHost
from toolbench.record import store
from toolbench.record.schema import LoadModel, Omission, Status
from toolbench.run import runner
from toolbench.scenario import read as scenario

TOOLS = ("wrk", "hey", "h2load", "httperf")
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                                 reason="wrk, hey, h2load or httperf is not on PATH (scripts/install.sh installs them)")]

@pytest.mark.parametrize("tool", TOOLS)
def test_detect_finds_the_installed_tool(tool):
    found = registry.get(tool).detect(LocalHost())
    assert isinstance(found, Found) and found.version[0].isdigit(), found


def test_every_supported_cell_runs_ok_against_nginx(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    results = {r.identity.cell_id: r for r in store.RunDir.open(summary.run_dir).results()}
    ran = {cid: r for cid, r in results.items() if r.outcome.status is not Status.UNSUPPORTED}
    assert set(ran) == {"wrk-c2-ka-rep1", "wrk-c2-close-rep1", "hey-c2-ka-rep1", "hey-c2-close-rep1",
                        "hey-c2-ka-rate40-rep1", "hey-c2-close-rate40-rep1", "h2load-c2-ka-rep1",
                        "httperf-c2-close-rate40-rep1"}
    for cid, r in ran.items():
        m = r.measurement
        assert r.outcome.status is Status.OK, (cid, r.outcome.error)
        assert m.counts.requests_ok == m.counts.requests_total > 0 and m.counts.requests_failed == 0, cid
        assert m.coordinated_omission is Omission.NOT_CORRECTED
        assert m.latency.max_ms is not None and m.latency.max_ms >= (m.latency.min_ms or 0.0), cid
    assert ran["wrk-c2-ka-rep1"].measurement.latency.percentiles.p999_ms is not None  # the done() script ran
    assert ran["hey-c2-ka-rep1"].measurement.counts.status_codes == {200: ran["hey-c2-ka-rep1"].measurement.counts.requests_total}
    opened = ran["httperf-c2-close-rate40-rep1"]
    assert opened.identity.model is LoadModel.OPEN and opened.measurement.counts.requests_total == 40


def test_bombardier_closed_and_rate_limited_against_nginx(tmp_path):
    if isinstance(registry.get("bombardier").detect(LocalHost()), Missing):
        pytest.skip("bombardier is not built (scripts/install.sh builds it with go)")
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.replace("[wrk, hey, h2load, httperf]", "[bombardier]").replace("[true, false]", "[false]"))
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    results = {r.identity.cell_id: r for r in store.RunDir.open(summary.run_dir).results()}
    assert set(results) == {"bombardier-c2-close-rep1", "bombardier-c2-close-rate40-rep1"}
    for cid, r in results.items():
        m = r.measurement
        assert r.outcome.status is Status.OK, (cid, r.outcome.error)
        assert m.counts.requests_ok == m.counts.requests_total > 0 and m.latency.percentiles.p50_ms is not None
    # Rate-limited, 1 s: about 40 requests (a limiter, not a schedule: no tighter bound is promised).
    assert results["bombardier-c2-close-rate40-rep1"].measurement.counts.requests_total <= 60


def test_hey_per_request_rows_give_a_histogram_and_series(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.replace("[wrk, hey, h2load, httperf]", "[hey]").replace("[true, false]", "[true]")
                    .replace("[null, 40]", "[null]") + "tools: {hey: {per_request: true}}\n")
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    (r,) = store.RunDir.open(summary.run_dir).results()
    m = r.measurement
    assert r.outcome.status is Status.OK, r.outcome.error
    assert m.histogram is not None and sum(s.requests for s in m.series) == m.counts.requests_ok > 0
    assert m.counts.requests_total is None  # hey writes no row for a request without a response
    assert m.latency.percentiles.p99_ms is not None and m.histogram_resolution_ms == 0.1
