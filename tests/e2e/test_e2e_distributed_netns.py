"""The tools' own distributed modes between machines (tests/helpers/netns.py), beyond the run of
scenarios/scale-out.yaml that tests/e2e/test_e2e_scaleout_scenario_netns.py checks against nginx's log:
`toolbench setup` of both generators, and a Ctrl-C in the middle of a Locust cell (master in
`ctl`, a worker in each of `gen1` and `gen2` over SSH, nginx in `target`)."""
from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Iterator

import psutil
import pytest

from helpers import netns
from helpers.logged_nginx import config, need_nginx
from helpers.netns_runs import TOOLBENCH, by_client
from helpers.netns_runs import scenario as scaleout_scenario
from toolbench.record import store
from toolbench.record.schema import Status
from toolbench.servers import nginx

pytestmark = pytest.mark.integration
PORT = 8081  # test_e2e_scaleout_netns.py leaves its nginx on 8080 in the same machine


@pytest.fixture(scope="module")
def served(testnet: netns.TestNet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """nginx in `target` at its address, port 8081: its URL and its access log."""
    need_nginx()
    folder = tmp_path_factory.mktemp("nginx-target")
    address = testnet.machines["target"].address
    url = f"http://{address}:{PORT}/"
    with nginx.static_files() as www:
        (folder / "tmp").mkdir()
        (folder / "nginx.conf").write_text(config(PORT, folder / "access.log", folder, www, address))
        proc = testnet.spawn("target", [nginx.binary(), "-p", str(folder), "-c", str(folder / "nginx.conf"),
                                        "-e", str(folder / "error.log")], folder / "nginx.out")
        try:
            for _ in range(100):
                check = testnet.run("ctl", [sys.executable, "-c", "import sys, urllib.request; "
                                            "urllib.request.urlopen(sys.argv[1], timeout=2)", url], timeout_s=10)
                if check.returncode == 0:
                    break
                time.sleep(0.2)
            else:
                pytest.fail(f"nginx in the target namespace never answered: {(folder / 'error.log').read_text()}")
            yield url, folder / "access.log"
        finally:
            netns.stop_tree(proc.pid)
            proc.wait(timeout=10)


def test_setup_prepares_both_generators_and_a_second_run_has_nothing_to_do(testnet: netns.TestNet,
                                                                           tmp_path: Path) -> None:
    gens = [testnet.machines[role] for role in ("gen1", "gen2")]
    sshd = gens[0].sshd
    assert sshd is not None
    lab = tmp_path / "lab.yaml"
    listed = "".join(f"    - {{address: {m.address}, user: {sshd.user}, key: {json.dumps(str(sshd.client_key))}}}\n"
                     for m in gens)
    lab.write_text(f"name: lab\nhosts:\n  generators:\n{listed}target: {{url: 'http://198.18.0.3:8080/'}}\n"
                   "matrix: {tool: [ab, jmeter]}\nstop: {duration: 2s}\n")
    toolbench = Path(sys.executable).with_name("toolbench")
    argv = [str(toolbench), "setup", str(lab), "--root", str(tmp_path / "there"), "--record-dir",
            str(tmp_path / "records"), "--known-hosts", str(testnet.known_hosts())]
    first, second = (testnet.run("ctl", argv, timeout_s=300) for _ in range(2))
    said = [run.stdout.decode().splitlines() for run in (first, second)]
    assert first.returncode == 0 and second.returncode == 0, (first.stderr.decode(), said)
    labels = [f"{sshd.user}@{m.address}:22" for m in gens]
    # The machines share this box's files: the first copies JMeter into the root, the second finds it there.
    assert any(line.startswith(f"{labels[0]}: changed: copied JMeter's home to ") for line in said[0]), said[0]
    assert [line.split(" (")[0] for line in said[1] if "nothing to do" in line] == [
        f"{label}: nothing to do" for label in labels], said[1]
    assert not any(": changed: " in line for line in said[1])


def test_ctrl_c_in_a_distributed_cell_stops_the_controller_and_every_generator(
        testnet: netns.TestNet, served: tuple[str, Path], tmp_path: Path) -> None:
    url, log = served
    since = log.stat().st_size if log.exists() else 0
    path = scaleout_scenario(testnet, tmp_path, "locust", "{duration: 60s}", "tools: {locust: {workers_per_host: 1}}\n")
    path.write_text(path.read_text().replace(f"http://{testnet.machines['target'].address}:8080/", url))
    reports = tmp_path / "reports"
    gens = [testnet.machines[role].address for role in ("gen1", "gen2")]
    run = testnet.spawn("ctl", [*TOOLBENCH, "run", str(path), "--reports-dir", str(reports), "--quiet",
                                "--known-hosts", str(testnet.known_hosts())], tmp_path / "run.out")
    deadline = time.monotonic() + 120
    while not all(by_client(log, since)[g] for g in gens) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert run.poll() is None, (tmp_path / "run.out").read_text()[-2000:]
    run.send_signal(signal.SIGINT)  # `ip netns exec` became toolbench: the signal is toolbench's
    assert run.wait(timeout=90) != 0
    (folder,) = reports.iterdir()
    (result,) = store.RunDir.open(folder).results()
    assert result.outcome.status is Status.INTERRUPTED, result.outcome
    parts = result.generators
    assert [p.name for p in parts] == ["gen1", "gen2"]
    assert all(p.status is Status.FAILED and "interrupted with the controller" in (p.error or "") for p in parts)
    assert all(p.cost is not None and p.cost.samples for p in parts)  # their monitors' figures kept
    # Killed before they wrote their own requests: none is made up, and the notes say why.
    assert all(p.measurement.counts.requests_total is None for p in parts)
    assert sum("its own figures are absent: " in note and "no worker stats" in note for note in result.notes) == 2
    port = (folder / "raw" / result.identity.cell_id / "command.txt").read_text().split("--master-bind-port ")[1].split()[0]
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if "--master-port" in (p.info["cmdline"] or [])
            and port in (p.info["cmdline"] or [])]
    assert left == []  # no worker outlived the cell
    assert all((folder / part.path / "stdout.txt").exists() for part in parts if part.path)
