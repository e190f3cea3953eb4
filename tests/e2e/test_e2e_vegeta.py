"""vegeta driven by the runner against the bundled nginx on loopback, 1 s a cell: its steps
turn the results file into rows and a report, and the cells end ok with sane figures."""
import pytest

from toolbench.contract import registry
from toolbench.contract.adapter import Missing
from toolbench.hosts.local import LocalHost
from toolbench.record import histogram, store
from toolbench.record.schema import Fidelity, LoadModel, Omission, Status
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration

SCENARIO = """\
name: vegeta-live
target: {server: nginx-static}
matrix:
  tool: [vegeta]
  concurrency: [2]
  keepalive: [true]
  rate: [null, 200]
stop: {duration: 1s}
"""


def test_open_and_closed_cells_run_ok_against_nginx(tmp_path):
    if isinstance(registry.get("vegeta").detect(LocalHost()), Missing):
        pytest.skip("vegeta is not built (scripts/install.sh builds it with go)")
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    results = {r.identity.cell_id: r for r in store.RunDir.open(summary.run_dir).results()}
    assert set(results) == {"vegeta-c2-ka-rep1", "vegeta-c2-ka-rate200-rep1"}
    for cid, r in results.items():
        m = r.measurement
        assert r.outcome.status is Status.OK, (cid, r.outcome.error)
        assert m.counts.requests_ok == m.counts.requests_total > 0 and m.counts.status_codes == {200: m.counts.requests_total}
        assert histogram.decode(m.histogram).get_total_count() == m.counts.requests_total
        assert sum(s.requests for s in m.series) == m.counts.requests_total
        assert 0 < m.latency.min_ms <= m.latency.percentiles.p50_ms <= m.latency.percentiles.p99_ms <= m.latency.max_ms
        assert m.transfer.received_bytes == 13 * m.counts.requests_total  # "Hello, World!"
        assert m.coordinated_omission is Omission.NOT_CORRECTED and m.fidelity_of("histogram") is Fidelity.DERIVED
        roles = {a.role for a in r.outcome.artifacts}
        assert {"csv", "report", "results"} <= roles, roles
        command = (summary.run_dir / "raw" / cid / "command.txt").read_text().splitlines()
        assert command[1:] == ["{} encode --to csv results.bin > results.csv".format(command[0].split()[0]),
                               "{} report -type=json results.bin > report.json".format(command[0].split()[0])]
    opened = results["vegeta-c2-ka-rate200-rep1"]
    assert opened.identity.model is LoadModel.OPEN
    # 200/s for 1 s on a fixed schedule: vegeta stops at the duration, so it sends at most the
    # ticks due by then (one more at the edge), however fast the target answers.
    assert opened.measurement.counts.requests_total <= 201 and opened.measurement.rates.rps is not None
