"""The real JMeter 5.6 (installed by `toolbench install jmeter` into .tools/) driven by the
runner against the bundled nginx on loopback. JMeter's JVM takes 2-4 s to start, so the
cells are short and few."""
from pathlib import Path

import pytest

from conftest import REPO
from toolbench.record import histogram, store
from toolbench.record.schema import Status
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not list((REPO / ".tools").glob("jmeter-5.*/bin/jmeter")),
                       reason="JMeter 5.x is not in .tools/ (run `toolbench install jmeter`)"),
]

TIMED = """\
name: jmeter-live
target: {server: nginx-static}
matrix:
  tool: [jmeter]
  concurrency: [4]
  keepalive: [true, false]
stop: {duration: 3s}
tools:
  jmeter: {heap: 256m}
"""

COUNTED_404 = """\
name: jmeter-404
target: {server: nginx-static}
request: {method: GET, path: /nope}
matrix:
  tool: [jmeter]
  concurrency: [4]
stop: {requests: 10}
"""


def run(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    return {r.identity.cell_id: r for r in store.RunDir.open(summary.run_dir).results()}


def test_timed_cells_keepalive_on_and_off(tmp_path):
    results = run(tmp_path, TIMED)
    for cell_id, response_bytes in (("jmeter-c4-ka-rep1", 248), ("jmeter-c4-close-rep1", 243)):
        r = results[cell_id]
        assert r.outcome.status is Status.OK, r.outcome.error
        assert r.identity.tool_version.startswith("5.")
        n = r.measurement.counts.requests_total
        assert n > 0 and r.measurement.counts.requests_ok == n and r.measurement.counts.status_codes == {200: n}
        assert r.measurement.transfer.received_bytes == response_bytes * n
        assert histogram.decode(r.measurement.histogram).get_total_count() == n
        assert r.measurement.latency.mean_ms is not None and r.measurement.latency.percentiles.p99_ms is not None
        assert r.measurement.latency.ttfb_mean_ms is not None and r.measurement.latency.connect_mean_ms is not None
        assert r.measurement.rates.rps is not None and r.measurement.rates.rps_derived is not None
        assert 2.0 <= r.measurement.timing.duration_s <= 4.0  # the scheduler's 3 s, first sample to last
        roles = {a.role for a in r.outcome.artifacts}
        assert {"stdout", "stderr", "jtl", "log"} <= roles


def test_a_request_count_rounds_up_and_404s_fail_the_cell(tmp_path):
    r = run(tmp_path, COUNTED_404)["jmeter-c4-ka-rep1"]
    assert r.outcome.status is Status.FAILED and "12 http 4xx" in r.outcome.error
    assert r.measurement.counts.requests_total == 12  # ceil(10 / 4) loops for each of 4 threads
    assert r.measurement.counts.failures.http_4xx == 12 and r.measurement.counts.status_codes == {404: 12}
