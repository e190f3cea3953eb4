"""The runner with its observers: every executed cell carries the generator's cost, the
probe's figures and the prerequisites checked before the run."""
import json
import resource
from pathlib import Path

import pytest

from conftest import need
from toolbench.cli.main import main
from toolbench.hosts import prereq
from toolbench.record import store
from toolbench.record.schema import Status
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration


def _somaxconn() -> str:
    return Path("/proc/sys/net/core/somaxconn").read_text().strip()


def _nofile() -> int:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return 4096 if hard == resource.RLIM_INFINITY else min(4096, hard)


OBSERVED = """\
name: observed
target: {{server: nginx-static}}
matrix: {{tool: [ab, siege], concurrency: [4], keepalive: [true, false]}}
stop: {{duration: 2s}}
probe: {{interval: 200ms, baseline: 10}}
monitor: {{interval: 500ms}}
prerequisites:
  ulimit: {{nofile: {nofile}}}
  sysctl: {{net.core.somaxconn: {somaxconn}}}
"""


def test_every_executed_cell_carries_cost_sockets_and_probe(tmp_path):
    need("ab"), need("siege")
    path = tmp_path / "s.yaml"
    path.write_text(OBSERVED.format(nofile=_nofile(), somaxconn=_somaxconn()))
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    run = store.RunDir.open(summary.run_dir)
    results = run.results()
    assert len(results) == 4
    for r in results:
        assert r.outcome.status is Status.OK, (r.identity.cell_id, r.outcome.error)
        c = r.cost
        assert c.cpu_user_s + c.cpu_system_s > 0 and c.cpu_us_per_request > 0 and c.cpu_mean_pct > 0
        assert c.rss_peak_bytes > 0 and c.sockets_peak >= 1 and c.open_files_peak >= 4
        # siege ends a -t run at a whole second of the clock: after 1 to 2 s here.
        assert c.time_wait_peak is not None and c.interval_s == 0.5 and c.samples >= 2
        if r.identity.keepalive:
            assert c.connections_peak == 4 and c.tcp_cwnd_mean > 0 and c.tcp_rtt_mean_ms > 0
        p = r.probe
        assert len(p.baseline_ms) == 10 and p.baseline_p50_ms > 0
        assert p.interval_s == 0.2 and len(p.samples_ms) >= 3 and p.failures == 0
        assert p.p50_ms > 0 and p.server_bound is not None
        assert p.findings
        monitor = [a for a in r.outcome.artifacts if a.role == "monitor"]
        assert len(monitor) == 1
        lines = (run.path / monitor[0].path).read_text().splitlines()
        assert len(lines) == c.samples and "cpu_pct_per_core" in json.loads(lines[0])["host"]
    manifest = run.manifest()
    checked = manifest.prerequisites
    assert checked.went_on is False and checked.host == "local"
    by_key = {(f.kind, f.key): f for f in checked.findings}
    assert by_key[("sysctl", "net.core.somaxconn")].found == _somaxconn()
    assert by_key[("ulimit", "nofile")].ok is True
    assert by_key[("ulimit", "nofile")].found in (str(_nofile()), str(resource.getrlimit(resource.RLIMIT_NOFILE)[0]))
    assert manifest.observation.probe.interval_s == 0.2


UNMET = """\
name: unmet
target: {server: nginx-static}
matrix: {tool: [ab], concurrency: [1]}
stop: {requests: 200}
probe: {enabled: false}
prerequisites:
  sysctl: {net.ipv4.tcp_no_such_knob: 1}
"""


def test_an_unmet_prerequisite_stops_the_run_before_anything_runs(tmp_path, capsys):
    need("ab")
    path = tmp_path / "s.yaml"
    path.write_text(UNMET)
    with pytest.raises(prereq.PrerequisiteError, match="net.ipv4.tcp_no_such_knob"):
        runner.run(scenario.load(path), tmp_path / "reports")
    assert not (tmp_path / "reports").exists()
    assert main(["run", str(path), "--reports-dir", str(tmp_path / "cli")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toolbench: error: unmet prerequisites: UNMET: net.ipv4.tcp_no_such_knob")
    assert "--go-on" in err and "Traceback" not in err


def test_told_to_go_on_it_runs_and_the_manifest_says_so(tmp_path):
    need("ab")
    path = tmp_path / "s.yaml"
    path.write_text(UNMET)
    summary = runner.run(scenario.load(path), tmp_path / "reports", go_on=True)
    run = store.RunDir.open(summary.run_dir)
    (result,) = run.results()
    assert result.outcome.status is Status.OK and result.probe is None  # probe: {enabled: false}
    assert result.cost.cpu_us_per_request > 0
    checked = run.manifest().prerequisites
    assert checked.went_on is True
    (unmet,) = [f for f in checked.findings if f.kind == "sysctl"]
    assert unmet.ok is False and unmet.note == "no such key on this kernel"
