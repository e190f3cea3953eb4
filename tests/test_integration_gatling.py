"""The real Gatling 3.10 (installed by scripts/install_gatling.sh into .tools/) driven by the
runner against the bundled nginx on loopback: one rate cell (the open model) and one
concurrency cell (the closed model), 2 s of load each, and `toolbench tools` naming it."""
import pytest

from toolbench import registry, runner, scenario, store
from toolbench.adapter import Found
from toolbench.hosts import LocalHost
from toolbench.schema import LoadModel, Omission, Status

FOUND = registry.get("gatling").detect(LocalHost())
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not isinstance(FOUND, Found), reason=f"{getattr(FOUND, 'reason', '')} "
                                                                     "(run scripts/install_gatling.sh)")]

SCENARIO = """\
name: gatling-live
target: {server: nginx-static}
matrix:
  tool: [gatling]
  concurrency: [2]
  keepalive: [true]
  rate: [null, 40]
stop: {duration: 2s}
probe: {enabled: false}
"""


def test_an_open_and_a_closed_cell_run_ok_against_nginx(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    results = {r.identity.cell_id: r for r in store.RunDir.open(summary.run_dir).results()}
    assert set(results) == {"gatling-c2-ka-rep1", "gatling-c2-ka-rate40-rep1"}
    for cid, r in results.items():
        m = r.measurement
        assert r.outcome.status is Status.OK, (cid, r.outcome.error)
        assert m.counts.requests_ok == m.counts.requests_total > 0 and m.counts.requests_failed == 0, cid
        assert m.coordinated_omission is Omission.NOT_CORRECTED and m.histogram is not None
        assert r.identity.tool_version == FOUND.version
    opened = results["gatling-c2-ka-rate40-rep1"]
    # constantUsersPerSec(40).during(2 s) injects 80 users, one request each, on its schedule.
    assert opened.identity.model is LoadModel.OPEN and opened.measurement.counts.requests_total == 80


def test_tools_lists_gatling_with_its_version():
    from test_cli import cli

    done = cli("tools")
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("gatling "))
    assert FOUND.version in line and FOUND.path in line
