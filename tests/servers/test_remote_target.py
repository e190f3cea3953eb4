"""A bundled stack on `hosts.target`: started over SSH (the loopback sshd of the suite),
loaded from here, sampled there, stopped with no process of it left."""
from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from helpers.sshd_server import Sshd, alive_remotely
from toolbench.errors import ScenarioError
from toolbench.hosts.ssh import SSHHost
from toolbench.record import store
from toolbench.record.schema import Status
from toolbench.run import runner
from toolbench.scenario import read as scenario


def _scenario(tmp_path: Path, sshd: Sshd, targets: str, extra: str = "") -> Path:
    path = tmp_path / "far.yaml"
    path.write_text(f"""\
name: far
hosts:
  target: {{address: 127.0.0.1, port: {sshd.port}, user: {sshd.user}, key: "{sshd.client_key}"}}
targets: {targets}
matrix: {{tool: [ab], concurrency: [2]}}
stop: {{requests: 200}}
monitor: {{interval: 100ms}}
probe: {{enabled: false}}
{extra}""")
    return path


@pytest.mark.integration
def test_bundled_targets_run_on_the_target_host_with_their_cost_sampled_there(sshd: Sshd, tmp_path: Path) -> None:
    targets = "{static: {server: nginx-static, workers: 1}, threads: {server: socket-threads, sleep: 0ms}}"
    path = _scenario(tmp_path, sshd, targets, "prerequisites: {ulimit: {nofile: 4096}}\n")
    summary = runner.run(scenario.load(path), tmp_path / "reports", known_hosts=sshd.known_hosts)
    run = store.RunDir.open(summary.run_dir)
    results = {r.identity.target_label: r for r in run.results()}
    records = {t.name: t for t in run.manifest().targets}
    assert set(results) == set(records) == {"static", "threads"}
    # The prerequisites were checked on the target host too, as on the generator.
    hosts = {f.host for f in run.manifest().prerequisites.findings if f.kind == "ulimit"}
    assert hosts == {f"{sshd.user}@127.0.0.1:{sshd.port}", "local"}
    for name, version in (("static", "nginx "), ("threads", "Python ")):
        result, record = results[name], records[name]
        assert result.outcome.status is Status.OK, result.outcome.error
        assert result.measurement.counts.requests_ok == 200
        assert record.version is not None and record.version.startswith(version), record.version
        # Its cost comes from the sampler that ran there, its series fetched beside the cell.
        cost = result.server_cost
        assert cost is not None and cost.samples is not None and cost.samples >= 2, cost
        assert cost.cpu_user_s is not None and cost.rss_peak_bytes and cost.processes_peak, cost
        assert cost.cpu_us_per_request is not None and cost.workers == 1
        series = [json.loads(line) for line in (run.path / "raw" / result.identity.cell_id / "server.jsonl")
                  .read_text().splitlines()]
        assert len(series) == cost.samples and series[0]["tree"]["processes"] >= 1
        assert "server-monitor" in {a.role for a in result.outcome.artifacts}
        # Stopped: no process of its recorded groups is left there, nothing answers at its
        # port any more, and its logs were fetched.
        folder = run.path / "targets" / name
        groups = [int(p.read_text().split()[-1]) for p in folder.glob("**/*.pgid")]
        assert groups and not any(alive_remotely(sshd, pid) for pid in groups)
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", int(record.url.rsplit(":", 1)[1])), timeout=1).close()
        assert list(folder.glob("**/*.stderr.txt")), "the server's logs were fetched"


@pytest.mark.integration
def test_without_toolbench_there_the_cost_is_absent_with_a_note_and_a_missing_program_fails_its_cells(
        sshd: Sshd, tmp_path: Path) -> None:
    """The system's python3 has no toolbench: nginx-static still runs, its cost is absent and
    says why; a uwsgi at a path that does not exist fails its target's cells, naming the line;
    a server never ready fails its cells, naming its timeout, and is stopped there."""
    path = _scenario(tmp_path, sshd, "{static: {server: nginx-static, workers: 1}, wsgi: {server: uwsgi}, "
                                     "never: {server: nginx-static, ready: {http: /nope, status: 200, timeout: 2s}}}")
    path.write_text(path.read_text().replace(
        f'key: "{sshd.client_key}"}}',
        f'key: "{sshd.client_key}",\n           tools: {{python: /usr/bin/python3, uwsgi: /nonexistent/uwsgi}}}}'))
    summary = runner.run(scenario.load(path), tmp_path / "reports", known_hosts=sshd.known_hosts,
                         allow_commands=True)
    results = {r.identity.target_label: r for r in store.RunDir.open(summary.run_dir).results()}
    static = results["static"]
    assert static.outcome.status is Status.OK, static.outcome.error
    assert static.server_cost is not None and static.server_cost.cpu_user_s is None
    assert any("sampler did not start" in note and "toolbench" in note for note in static.server_cost.notes), \
        static.server_cost.notes
    wsgi = results["wsgi"]
    assert wsgi.outcome.status is Status.FAILED
    assert wsgi.outcome.error is not None and "far.yaml:4: hosts.target.tools.uwsgi: /nonexistent/uwsgi not found" \
        in wsgi.outcome.error
    never = results["never"]
    assert never.outcome.status is Status.FAILED and never.outcome.error is not None
    assert "was not ready within ready.timeout = 2s (HTTP 404, not 200)" in never.outcome.error
    groups = [int(p.read_text().split()[-1]) for p in (summary.run_dir / "targets" / "never").glob("**/*.pgid")]
    assert groups and not any(alive_remotely(sshd, pid) for pid in groups)


def test_target_host_tools_name_only_the_stacks_programs(tmp_path: Path, sshd: Sshd) -> None:
    path = _scenario(tmp_path, sshd, "{far: {server: nginx-static}}")
    text = path.read_text().replace(f'key: "{sshd.client_key}"}}', f'key: "{sshd.client_key}", '
                                                                    'tools: {siege: /usr/bin/siege}}')
    path.write_text(text)
    with pytest.raises(ScenarioError, match=r"far.yaml:3.*hosts.target.tools.siege: unknown key"):
        scenario.load(path)


def test_an_ipv6_target_host_is_refused_for_a_bundled_stack(sshd: Sshd) -> None:
    from toolbench.errors import TargetError
    from toolbench.servers import remote

    with SSHHost(sshd.spec(), known_hosts=sshd.known_hosts) as host:
        with pytest.raises(TargetError, match="listen on IPv4"):
            remote.machine(host, "::1", {}, {})


def test_a_stack_on_a_loopback_target_host_is_out_of_reach_of_a_generator_elsewhere(tmp_path: Path) -> None:
    path = tmp_path / "apart.yaml"
    path.write_text("name: apart\nhosts:\n  generator: {address: 192.0.2.10}\n  target: {address: 127.0.0.1}\n"
                    "targets:\n  far: {server: nginx-static}\nmatrix: {tool: [ab]}\n")
    with pytest.raises(ScenarioError, match=r"apart.yaml:6: targets.far.server: the bundled nginx-static listens "
                                            r"on 127.0.0.1, out of reach of a generator at 192.0.2.10"):
        runner.run(scenario.load(path), tmp_path / "reports")
