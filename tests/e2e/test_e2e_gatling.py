"""The real Gatling 3.10 (installed by `toolbench install gatling` into .tools/) driven by the
runner against the bundled nginx on loopback: one rate cell (the open model) and one
concurrency cell (the closed model), 2 s of load each, and `toolbench tools` naming it."""
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from toolbench.contract import registry
from toolbench.contract.adapter import Found
from toolbench.contract.recipe import Script
from toolbench.hosts.local import LocalHost
from toolbench.record import store
from toolbench.record.schema import LoadModel, Omission, Status
from toolbench.run import runner
from toolbench.scenario import read as scenario

FOUND = registry.get("gatling").detect(LocalHost())
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not isinstance(FOUND, Found), reason=f"{getattr(FOUND, 'reason', '')} "
                                                                     "(run toolbench install gatling)")]

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
    from helpers.cli import cli

    done = cli("tools")
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("gatling "))
    assert FOUND.version in line and FOUND.path in line


def test_a_second_install_keeps_the_home_and_keeps_it_offline():
    home = Path(FOUND.path).parents[1]
    stamp = (home / ".toolbench-complete").read_text()
    (step,) = [s for s in registry.get("gatling").install.steps if isinstance(s, Script)]
    with resources.as_file(resources.files(step.package) / step.script) as script:
        done = subprocess.run([str(script)], capture_output=True, text=True, timeout=300,
                              env={"PATH": "/usr/bin:/bin", "TOOLBENCH_TOOLS": str(home.parent),
                                   "GATLING_VERSION": FOUND.version})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == str(home) and (home / ".toolbench-complete").read_text() == stamp
    # No run reaches beyond loopback: no warm-up request to gatling.io, no analytics, and a stored
    # version check, so that Gatling does not ask search.maven.org for its latest release.
    conf = (home / "conf" / "gatling.conf").read_text()
    assert 'warmUpUrl = ""' in conf and "enableAnalytics = false" in conf
    prefs = home / "prefs" / ".java" / ".userPrefs" / "io" / "gatling" / "latestVersion" / "prefs.xml"
    assert 'key="lastCheckTimestamp" value="4102444800000"' in prefs.read_text()
    assert '-Djava.util.prefs.userRoot="$HOME_DIR/prefs"' in (home / "bin" / "gatling").read_text()
