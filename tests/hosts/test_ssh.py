"""SSHHost against a real sshd that this module starts on 127.0.0.1 with its own keys.
The remote machine is this machine, so what it reports can be checked against the local one."""
from __future__ import annotations

import _thread
import os
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from helpers.sshd_server import LOGIN_NOFILE_SOFT, Sshd, alive_remotely, keygen
from toolbench.adapters import ab
from toolbench.contract.adapter import RawOutput
from toolbench.contract.host import Limit, free_port
from toolbench.errors import HostError
from toolbench.hosts.local import LocalHost
from toolbench.hosts.ssh import SSHHost, connect
from toolbench.scenario.read import HostSpec
from toolbench.servers import remote
from toolbench.servers.process import RunningTarget


@pytest.fixture(scope="module")
def host(sshd: Sshd) -> Iterator[SSHHost]:
    with SSHHost(sshd.spec(), known_hosts=sshd.known_hosts) as h:
        yield h


def test_label_names_user_address_and_port(host: SSHHost, sshd: Sshd) -> None:
    assert host.label == f"{sshd.user}@127.0.0.1:{sshd.port}"


def test_awkward_arguments_arrive_verbatim(host: SSHHost) -> None:
    args = ["a b", "it's", '"q"', "$HOME", "x;y", "`id`", "$(id)", "*", "", "back\\slash", "new\nline", "--", "-n"]
    captured = host.capture(["printf", "%s|", *args])
    assert captured.exit_code == 0
    assert captured.stdout == "".join(f"{a}|" for a in args)


def test_run_writes_remote_streams_to_local_files(host: SSHHost, tmp_path: Path) -> None:
    remote = host.mkdtemp()
    try:
        script = 'pwd; echo "$GREETING"; echo to-stderr >&2; exit 3'
        completed = host.run(["sh", "-c", script], cwd=remote, stdout=tmp_path / "out", stderr=tmp_path / "err",
                             timeout_s=30, env={"GREETING": "hello 'there'"})
    finally:
        host.remove_tree(remote)
    assert completed.exit_code == 3 and not completed.timed_out and not completed.interrupted
    assert (tmp_path / "out").read_text() == f"{remote}\nhello 'there'\n"
    assert (tmp_path / "err").read_text() == "to-stderr\n"
    assert completed.cpu_user_s is None and completed.cpu_system_s is None  # not measured remotely


def test_timeout_kills_the_remote_process_tree(host: SSHHost, sshd: Sshd, tmp_path: Path) -> None:
    completed = host.run(["sh", "-c", "sleep 30 & echo $!; wait"], cwd="/", stdout=tmp_path / "out",
                         stderr=tmp_path / "err", timeout_s=1.5)
    assert completed.timed_out and completed.exit_code is None
    child = int((tmp_path / "out").read_text())
    assert not alive_remotely(sshd, child)


def test_ctrl_c_kills_the_remote_tool_and_reports_interrupted(host: SSHHost, sshd: Sshd, tmp_path: Path) -> None:
    out = tmp_path / "out"

    def press_ctrl_c() -> None:  # once the child is running, as a user would
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (out.exists() and out.read_text().endswith("\n")):
            time.sleep(0.05)
        _thread.interrupt_main()

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        completed = host.run(["sh", "-c", "sleep 30 & echo $!; wait"], cwd="/", stdout=out,
                             stderr=tmp_path / "err", timeout_s=60)
    finally:
        presser.join()
    assert completed.interrupted and completed.exit_code is None and not completed.timed_out
    assert not alive_remotely(sshd, int(out.read_text()))


_HOLDER = """
import sys, time
from pathlib import Path
from toolbench.scenario.read import HostSpec
from toolbench.hosts.ssh import SSHHost
address, port, user, key, known, folder = sys.argv[1:]
host = SSHHost(HostSpec(address=address, port=int(port), user=user, key=key), known_hosts=Path(known))
running = host.start(["sh", "-c", "sleep 300 & sleep 300"], cwd="/", stdout=Path(folder) / "out",
                     stderr=Path(folder) / "err")
print(running.pid, flush=True)
time.sleep(300)
"""


def test_a_remote_process_dies_with_toolbench_killed_by_sigkill(sshd: Sshd, tmp_path: Path) -> None:
    """No lifeline of this machine reaches the remote one: the channel's end is the signal."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, "127.0.0.1", str(sshd.port), sshd.user,
                               str(sshd.client_key), str(sshd.known_hosts), str(tmp_path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        pgid = int(holder.stdout.readline())
        assert alive_remotely(sshd, pgid)
    finally:
        holder.kill()
        holder.wait()
    # Both sleeps of its group, the backgrounded one too, end with the connection.
    deadline = time.monotonic() + 60
    with SSHHost(sshd.spec(), known_hosts=sshd.known_hosts) as other:
        while remote.members(other, pgid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert remote.members(other, pgid) == []


def test_missing_program_and_missing_folder_are_host_errors(host: SSHHost, tmp_path: Path) -> None:
    with pytest.raises(HostError, match=r"no-such-tool-xyz: not found"):
        host.run(["no-such-tool-xyz"], cwd="/", stdout=tmp_path / "o", stderr=tmp_path / "e", timeout_s=10)
    with pytest.raises(HostError, match=r"cannot start true: .*/no/such/folder"):
        host.run(["true"], cwd="/no/such/folder", stdout=tmp_path / "o", stderr=tmp_path / "e", timeout_s=10)


def test_put_get_round_trip(host: SSHHost, tmp_path: Path) -> None:
    data = os.urandom(200_000)
    (tmp_path / "sent").write_bytes(data)
    remote = host.mkdtemp()
    try:
        host.put(tmp_path / "sent", f"{remote}/file with space")
        host.get(f"{remote}/file with space", tmp_path / "back")
        with pytest.raises(HostError, match="cannot copy"):
            host.get(f"{remote}/absent", tmp_path / "absent")
    finally:
        host.remove_tree(remote)
    assert (tmp_path / "back").read_bytes() == data
    assert host.capture(["test", "-e", remote]).exit_code == 1  # removed


def test_facts_are_this_machines(host: SSHHost) -> None:
    assert host.facts() == LocalHost().facts()


def test_which_searches_the_remote_path(host: SSHHost) -> None:
    assert host.which("sh") == shutil.which("sh", path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    assert host.which("no-such-tool-xyz") is None
    assert host.which("sh; touch /tmp/x") is None
    assert host.which("/bin/sh") == "/bin/sh"


def test_read_sysctl(host: SSHHost) -> None:
    assert host.read_sysctl("kernel.ostype") == "Linux"
    assert host.read_sysctl("net.core.somaxconn") == Path("/proc/sys/net/core/somaxconn").read_text().strip()
    assert host.read_sysctl("net.ipv4.tcp_tw_recycle") is None  # gone since Linux 4.12
    with pytest.raises(HostError, match="not a sysctl key"):
        host.read_sysctl("../../etc/passwd")


def test_ulimit_nofile_is_the_logins_and_limits_are_raised(host: SSHHost) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert host.ulimit_nofile() == Limit(LOGIN_NOFILE_SOFT, hard)
    assert host.process_limits()["nofile"].soft == LOGIN_NOFILE_SOFT
    raised = host.with_limits({"nofile": 4096})
    assert raised.process_limits()["nofile"] == Limit(4096, hard)
    assert raised.ulimit_nofile() == Limit(LOGIN_NOFILE_SOFT, hard)  # the login itself is unchanged


def test_unknown_host_key_is_refused_until_trusted_explicitly(sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    with pytest.raises(HostError) as refused:
        SSHHost(sshd.spec(), known_hosts=known)
    message = str(refused.value)
    listed = subprocess.run(["ssh-keygen", "-lf", str(sshd.host_key_pub)], capture_output=True, text=True).stdout
    assert "unknown host key" in message and "--trust-new-host-key" in message and "\n" not in message
    assert listed.split()[1] in message  # the fingerprint, to check before trusting
    assert not known.exists()
    with SSHHost(sshd.spec(), known_hosts=known, trust_new_key=True) as trusted:
        assert trusted.capture(["true"]).exit_code == 0
    kind, key = sshd.host_key_pub.read_text().split()[:2]
    assert known.read_text().split() == [f"[127.0.0.1]:{sshd.port}", kind, key]
    with SSHHost(sshd.spec(), known_hosts=known) as again:  # now known: no trust needed
        assert again.capture(["true"]).exit_code == 0


def test_changed_host_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    keygen(tmp_path / "other")
    kind, key = (tmp_path / "other.pub").read_text().split()[:2]
    (tmp_path / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {kind} {key}\n")
    with pytest.raises(HostError, match="host key changed"):
        SSHHost(sshd.spec(), known_hosts=tmp_path / "known_hosts", trust_new_key=True)


def test_wrong_client_key_is_one_line(sshd: Sshd, tmp_path: Path) -> None:
    keygen(tmp_path / "stranger")
    with pytest.raises(HostError) as failed:
        SSHHost(sshd.spec(key=tmp_path / "stranger"), known_hosts=sshd.known_hosts)
    assert str(failed.value) == f"{sshd.user}@127.0.0.1:{sshd.port}: cannot connect: authentication failed (no key the server accepts)"
    with pytest.raises(HostError, match="key file .* not found"):
        SSHHost(sshd.spec(key=tmp_path / "absent"), known_hosts=sshd.known_hosts)


def test_refused_port(sshd: Sshd) -> None:
    port = free_port()
    with pytest.raises(HostError, match=rf"@127\.0\.0\.1:{port}: cannot connect: connection refused$"):
        SSHHost(sshd.spec(port=port), known_hosts=sshd.known_hosts)


def test_a_port_without_ssh_is_one_line_and_no_traceback(sshd: Sshd, nginx: RunningTarget) -> None:
    # In a process of its own: pytest's log capture would hide what paramiko prints by default.
    port = int(nginx.base_url.rsplit(":", 1)[1])
    code = ("import sys\nfrom toolbench.hosts.ssh import SSHHost\nfrom toolbench.scenario.read import HostSpec\n"
            "from toolbench.errors import HostError\n"
            f"try:\n    SSHHost(HostSpec(address='127.0.0.1', port={port}, user='root'), timeout_s=5)\n"
            "except HostError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout == f"root@127.0.0.1:{port}: cannot connect: no SSH server answers on that port (no SSH banner)\n"
    assert done.stderr == ""  # no paramiko traceback


def test_connect_picks_the_implementation(sshd: Sshd) -> None:
    assert isinstance(connect(HostSpec()), LocalHost)
    remote = connect(sshd.spec(), known_hosts=sshd.known_hosts)
    assert isinstance(remote, SSHHost)
    remote.close()


@pytest.mark.integration
def test_ab_runs_remotely_and_its_output_parses(host: SSHHost, nginx: RunningTarget, tmp_path: Path) -> None:
    if host.which("ab") is None:
        pytest.skip("ab is not installed (scripts/install.sh installs it)")
    assert ab.ADAPTER.detect(host) == ab.ADAPTER.detect(LocalHost())
    remote = host.mkdtemp()
    try:
        completed = host.run(["ab", "-n", "200", "-c", "2", "-e", "percentiles.csv", nginx.base_url + "/"],
                             cwd=remote, stdout=tmp_path / "stdout.txt", stderr=tmp_path / "stderr.txt",
                             timeout_s=60)
        host.get(f"{remote}/percentiles.csv", tmp_path / "percentiles.csv")
    finally:
        host.remove_tree(remote)
    assert completed.exit_code == 0
    m = ab.parse(RawOutput(stdout=(tmp_path / "stdout.txt").read_text(), stderr=(tmp_path / "stderr.txt").read_text(),
                           exit_code=completed.exit_code, files={"csv": tmp_path / "percentiles.csv"}))
    assert m.counts.requests_total == 200 and m.counts.requests_failed == 0
    assert m.concurrency == 2 and m.url == nginx.base_url + "/"
    assert m.latency.resolution_ms == 0.001  # the CSV came back and was read


@pytest.mark.integration
def test_a_scenario_runs_its_tools_on_a_remote_generator(sshd: Sshd, tmp_path: Path) -> None:
    from toolbench.record import store
    from toolbench.record.schema import Status
    from toolbench.run import runner
    from toolbench.scenario import read as scenario

    text = f"""\
name: remote
hosts:
  generator: {{address: 127.0.0.1, port: {sshd.port}, user: {sshd.user}, key: "{sshd.client_key}"}}
target: {{server: nginx-static}}
matrix: {{tool: [ab, siege], concurrency: [2]}}
stop: {{requests: 400}}
probe: {{interval: 100ms, baseline: 5}}
"""
    path = tmp_path / "remote.yaml"
    path.write_text(text)
    summary = runner.run(scenario.load(path), tmp_path / "reports", known_hosts=sshd.known_hosts)
    run = store.RunDir.open(summary.run_dir)
    results = {r.identity.tool: r for r in run.results()}
    assert run.manifest().environment.host == f"{sshd.user}@127.0.0.1:{sshd.port}"
    for tool in ("ab", "siege"):
        assert results[tool].outcome.status is Status.OK, results[tool].outcome.error
        assert results[tool].measurement.counts.requests_ok == 400
        probed = results[tool].probe
        assert probed is not None and probed.baseline_ms  # the probe runs from this machine
    # ab's -e and -g files were written remotely and fetched back beside its streams.
    roles = {a.role for a in results["ab"].outcome.artifacts}
    assert {"csv", "tsv"} <= roles
    assert results["ab"].measurement.histogram is not None
    assert results["ab"].cost is not None and results["ab"].cost.rss_peak_bytes is None  # not monitored remotely


def test_an_unknown_generator_key_stops_the_run_before_anything_runs(sshd: Sshd, tmp_path: Path) -> None:
    from toolbench.errors import HostError
    from toolbench.run import runner
    from toolbench.scenario import read as scenario

    path = tmp_path / "remote.yaml"
    path.write_text(f"name: remote\nhosts: {{generator: {{address: 127.0.0.1, port: {sshd.port}, user: {sshd.user}, "
                    f"key: \"{sshd.client_key}\"}}}}\ntarget: {{server: nginx-static}}\nmatrix: {{tool: [ab]}}\n")
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(HostError, match="unknown host key"):
        runner.run(scenario.load(path), tmp_path / "reports", known_hosts=empty)
    assert not (tmp_path / "reports").exists()


def test_a_command_target_runs_on_the_target_host_and_is_stopped_there(sshd: Sshd, tmp_path: Path) -> None:
    from toolbench.record import store
    from toolbench.record.schema import Status
    from toolbench.run import runner
    from toolbench.scenario import read as scenario

    port = free_port()
    www = tmp_path / "www"
    www.mkdir()
    (www / "index.html").write_text("hi")
    text = f"""\
name: far
hosts:
  target: {{address: 127.0.0.1, port: {sshd.port}, user: {sshd.user}, key: "{sshd.client_key}"}}
target:
  command: "{sys.executable} -m http.server {port} --bind 127.0.0.1 --directory {www}"
  url: "http://127.0.0.1:{port}"
  ready: {{path: /index.html, timeout: 10s}}
request: {{path: /index.html}}
matrix: {{tool: [ab], concurrency: [2]}}
stop: {{requests: 50}}
"""
    path = tmp_path / "far.yaml"
    path.write_text(text)
    summary = runner.run(scenario.load(path), tmp_path / "reports", known_hosts=sshd.known_hosts,
                         allow_commands=True)
    (result,) = store.RunDir.open(summary.run_dir).results()
    assert result.outcome.status is Status.OK and result.measurement.counts.requests_ok == 50
    assert result.server_cost is None  # not sampled on another machine: absent, not 0
    # Its log was kept there and fetched when it stopped; nothing answers any more.
    assert "GET /index.html" in (summary.run_dir / "targets" / "command" / "target.stderr.txt").read_text()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


@pytest.mark.integration
def test_a_generator_laid_out_unlike_this_machine_runs_its_own_tools(sshd: Sshd, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The generator's Python with toolbench and its JMeter are at paths of its own, given per
    host in the scenario; the commands start those, not this machine's."""
    from toolbench.adapters.jmeter import adapter as jmeter
    from toolbench.contract.adapter import Missing
    from toolbench.record import store
    from toolbench.record.schema import Status
    from toolbench.run import runner
    from toolbench.scenario import read as scenario

    opt = tmp_path / "opt"
    opt.mkdir()
    (opt / "bench-venv").symlink_to(sys.prefix)  # the venv under another name: its python finds pyvenv.cfg there
    paths = {"engine": str(opt / "bench-venv" / "bin" / "python")}
    homes = sorted(Path(__file__).resolve().parents[2].joinpath(".tools").glob("jmeter-5.*/bin/ApacheJMeter.jar"))
    if homes:
        (opt / "apache-jmeter").symlink_to(homes[-1].parent.parent)
        paths["jmeter"] = str(opt / "apache-jmeter" / "bin" / "jmeter")
    # This machine's own places lead to no JMeter: only the path the scenario gives does.
    monkeypatch.setenv("TOOLBENCH_TOOLS", str(tmp_path / "no-tools"))
    monkeypatch.delenv("TOOLBENCH_JMETER_HOME", raising=False)
    with SSHHost(sshd.spec(), known_hosts=sshd.known_hosts) as remote:
        if remote.which("jmeter") is None:
            assert isinstance(jmeter.ADAPTER.detect(remote), Missing)
    tools = {"python": paths["engine"], **({"jmeter": paths["jmeter"]} if "jmeter" in paths else {})}
    text = f"""\
name: elsewhere
hosts:
  generator:
    address: 127.0.0.1
    port: {sshd.port}
    user: {sshd.user}
    key: "{sshd.client_key}"
    tools: {{{", ".join(f'{k}: "{v}"' for k, v in tools.items())}}}
target: {{server: nginx-static}}
matrix: {{tool: [{", ".join(paths)}], concurrency: [2]}}
stop: {{requests: 200}}
probe: {{enabled: false}}
"""
    path = tmp_path / "elsewhere.yaml"
    path.write_text(text)
    summary = runner.run(scenario.load(path), tmp_path / "reports", known_hosts=sshd.known_hosts,
                         allow_commands=True)
    results = {r.identity.tool: r for r in store.RunDir.open(summary.run_dir).results()}
    assert set(results) == set(paths)
    for tool, program in paths.items():
        result = results[tool]
        assert result.outcome.status is Status.OK, result.outcome.error
        assert result.measurement.counts.requests_ok == 200
        command = (summary.run_dir / "raw" / result.identity.cell_id / "command.txt").read_text()
        assert command.split()[0] == program, command


@pytest.mark.integration
def test_a_tls_cell_on_a_remote_generator_finds_the_targets_certificate_where_it_runs(sshd: Sshd,
                                                                                      tmp_path: Path) -> None:
    """The engine checks the certificate: it finds the copy staged with the cell's files there."""
    import sys

    from toolbench.record import store
    from toolbench.record.schema import Status
    from toolbench.run import runner
    from toolbench.scenario import read as scenario

    path = tmp_path / "remote-tls.yaml"
    path.write_text(f"""\
name: remote-tls
hosts:
  generator: {{address: 127.0.0.1, port: {sshd.port}, user: {sshd.user}, key: "{sshd.client_key}",
              tools: {{python: "{sys.executable}"}}}}
target: {{server: nginx-static}}
matrix: {{tool: [engine], concurrency: [2], keepalive: [true, false], protocol: [https]}}
stop: {{requests: 200}}
probe: {{enabled: false}}
""")
    summary = runner.run(scenario.load(path), tmp_path / "reports", known_hosts=sshd.known_hosts,
                         allow_commands=True)
    results = list(store.RunDir.open(summary.run_dir).results())
    assert len(results) == 2
    for r in results:
        assert r.outcome.status is Status.OK, r.outcome.error
        assert r.measurement.counts.requests_ok == 200 and r.tls is not None and r.tls.connections >= 2
        command = (summary.run_dir / "raw" / r.identity.cell_id / "command.txt").read_text()
        assert "target-cert.pem" in command and str(tmp_path) not in command.split("--cacert")[1].split()[0]
