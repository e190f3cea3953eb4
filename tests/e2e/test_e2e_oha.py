"""oha driven by the runner against the bundled nginx on loopback, 1 s a cell: closed and
rate cells, keep-alive on and off, each ending ok with every request answered 200."""
import pytest

from helpers.more_tools import SCENARIO
from toolbench.contract import registry
from toolbench.contract.adapter import Found, Missing
from toolbench.hosts.local import LocalHost
from toolbench.record import store
from toolbench.record.schema import LoadModel, Omission, Status
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def oha() -> Found:
    found = registry.get("oha").detect(LocalHost())
    if isinstance(found, Missing):
        pytest.skip(f"oha is not built ({found.reason}); scripts/install.sh builds it with cargo")
    return found


def test_detect_names_the_version_of_the_install(oha):
    assert oha.version[0].isdigit() and f"oha-{oha.version}" in oha.path or oha.path.endswith("/oha")


def test_closed_and_rate_cells_run_ok_against_nginx(oha, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.replace("[wrk, hey, h2load, httperf]", "[oha]"))
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    results = {r.identity.cell_id: r for r in store.RunDir.open(summary.run_dir).results()}
    assert set(results) == {"oha-c2-ka-rep1", "oha-c2-close-rep1", "oha-c2-ka-rate40-rep1", "oha-c2-close-rate40-rep1"}
    for cid, r in results.items():
        m = r.measurement
        assert r.outcome.status is Status.OK, (cid, r.outcome.error)
        assert m.counts.requests_ok == m.counts.requests_total > 0 and m.counts.requests_failed == 0, cid
        assert m.counts.status_codes == {200: m.counts.requests_total}, cid
        assert m.latency.percentiles.p50_ms is not None and m.latency.max_ms >= m.latency.min_ms, cid
        assert r.identity.tool_version == oha.version, cid
    closed, rate = results["oha-c2-ka-rep1"], results["oha-c2-close-rate40-rep1"]
    assert closed.measurement.coordinated_omission is Omission.NOT_CORRECTED
    assert rate.identity.model is LoadModel.OPEN
    assert rate.measurement.coordinated_omission is Omission.CORRECTED
    # One schedule of 40 a second for 1 s: request i is due at i/40 s, so at most 41 are sent.
    assert 0 < rate.measurement.counts.requests_total <= 41


def test_rate_cell_without_latency_correction_says_so(oha, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.replace("[wrk, hey, h2load, httperf]", "[oha]").replace("[true, false]", "[true]")
                    .replace("[null, 40]", "[40]") + "tools: {oha: {latency_correction: false}}\n")
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    run = store.RunDir.open(summary.run_dir)
    (r,) = run.results()
    assert r.outcome.status is Status.OK, r.outcome.error
    assert r.measurement.coordinated_omission is Omission.NOT_CORRECTED
    assert "--latency-correction" not in (run.cell_dir(r.identity.cell_id) / "command.txt").read_text()
