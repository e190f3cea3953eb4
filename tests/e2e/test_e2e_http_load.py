"""The real http_load driven by the runner against the bundled nginx on loopback.

http_load is in no package registry: where it is not on PATH this is skipped, with
the reason, and its parser is covered by the recorded output in fixtures/http_load."""
import shutil

import pytest

from toolbench.adapters import http_load
from toolbench.contract.adapter import Found
from toolbench.hosts.local import LocalHost
from toolbench.record import store
from toolbench.record.schema import LoadModel, Status
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("http_load") is None,
                       reason="http_load is not on PATH (it is in no package registry; build it from its source)"),
]

SCENARIO = """\
name: http-load-live
target: {server: nginx-static}
matrix:
  tool: [http_load]
  concurrency: [4]
  keepalive: [true, false]
  rate: [null, 50]
stop: {duration: 2s}
"""


def test_detect_recognises_the_installed_http_load():
    found = http_load.ADAPTER.detect(LocalHost())
    assert isinstance(found, Found) and found.version == "unknown" and found.path.endswith("/http_load")


def test_closed_and_open_model_runs_against_nginx(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    results = {r.identity.cell_id: r for r in store.RunDir.open(summary.run_dir).results()}
    assert results["http_load-c4-ka-rep1"].outcome.status is Status.UNSUPPORTED
    assert "keep-alive" in results["http_load-c4-ka-rep1"].outcome.error
    closed, opened = results["http_load-c4-close-rep1"], results["http_load-c4-close-rate50-rep1"]
    for r in (closed, opened):
        assert r.outcome.status is Status.OK, r.outcome.error
        assert r.measurement.counts.requests_ok == r.measurement.counts.requests_total > 0
        assert r.measurement.counts.status_codes == {200: r.measurement.counts.requests_total}
        assert r.measurement.transfer.received_bytes == 13 * r.measurement.counts.requests_total
        assert r.measurement.rates.rps_derived == pytest.approx(r.measurement.rates.rps, rel=0.01)
        assert r.measurement.latency.ttfb_mean_ms is not None and r.measurement.latency.mean_ms is None
    assert opened.identity.model is LoadModel.OPEN and opened.identity.rate_rps == 50
    assert opened.measurement.rates.rps == pytest.approx(50, rel=0.2)
