"""The tools' own distributed modes between machines (tests/netns.py): the controller (Locust's
master, JMeter's controller) in `ctl`, a worker or server in each of `gen1` and `gen2` over SSH,
nginx in `target`. Each merged count is checked against nginx's access log; with each machine
its own network stack, every port and address is a real one (JMeter's pinned defaults too)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

import netns
from logged_nginx import config, need_nginx
from test_scaleout_netns import by_client, run_in_ctl
from test_scaleout_netns import scenario as scaleout_scenario
from toolbench.schema import Status
from toolbench.servers import nginx

pytestmark = pytest.mark.integration
CONCURRENCY = 4
PORT = 8081  # test_scaleout_netns.py leaves its nginx on 8080 in the same machine

# Run inside `ctl`, as toolbench would be: one distributed run, its outcome as JSON.
_DRIVE = """
import json, sys
from pathlib import Path
from toolbench import invariants, plan, scenario, ssh
from toolbench.adapter import Found
from toolbench.distributed import Generator
from toolbench.hosts import LocalHost
from toolbench.registry import get
from toolbench.scenario import HostSpec
args = json.loads(sys.argv[1])
adapter = get(args["tool"])
(planned,) = plan.expand(scenario.load(args["scenario"]))
cell = planned.cell.at(args["url"])
gens = []
for address in args["generators"]:
    host = ssh.SSHHost(HostSpec(address=address, user=args["user"], key=args["key"]), known_hosts=Path(args["known"]))
    found = adapter.detect(host)
    assert isinstance(found, Found), found
    gens.append(Generator(host, found, workers=1))
controller = adapter.detect(LocalHost())
outcome = adapter.distributed().run(cell, Path(args["workdir"]), controller, gens)
m = invariants.parse_checked(adapter, outcome.raw)
print(json.dumps({"exit": outcome.completed.exit_code, "failed": [p.error for p in outcome.failed_parts],
                  "parts": [p.label for p in outcome.parts], "total": m.counts.requests_total,
                  "bad": m.counts.requests_failed, "notes": list(outcome.notes)}))
"""


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


def _drive(testnet: netns.TestNet, tool: str, url: str, folder: Path, options: str = "") -> dict:
    lab = folder / "lab.yaml"
    lab.write_text(f"name: lab\ntarget: {{url: '{url}'}}\nmatrix: {{tool: [{tool}], concurrency: [{CONCURRENCY}]}}\n"
                   f"stop: {{duration: 3s}}\ntimeout: 120s\n{options}")
    gens = [testnet.machines[role] for role in ("gen1", "gen2")]
    sshd = gens[0].sshd
    assert sshd is not None
    workdir = folder / "cell"
    workdir.mkdir()
    args = {"tool": tool, "scenario": str(lab), "url": url, "generators": [m.address for m in gens],
            "user": sshd.user, "key": str(sshd.client_key), "known": str(testnet.known_hosts()),
            "workdir": str(workdir)}
    done = testnet.run("ctl", [sys.executable, "-c", _DRIVE, json.dumps(args)], timeout_s=300)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def _lines(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_locust_master_in_one_machine_and_workers_in_two_others(testnet: netns.TestNet, served: tuple[str, Path],
                                                                tmp_path: Path) -> None:
    url, log = served
    before = _lines(log)
    outcome = _drive(testnet, "locust", url, tmp_path)
    logged = _lines(log) - before
    assert outcome["exit"] == 0 and outcome["failed"] == [] and outcome["bad"] == 0, outcome
    assert outcome["total"] <= logged <= outcome["total"] + CONCURRENCY, (outcome["total"], logged)
    assert "2 workers on 2 generators" in outcome["notes"][0]


def test_jmeter_controller_in_one_machine_and_servers_in_two_others(testnet: netns.TestNet,
                                                                   served: tuple[str, Path], tmp_path: Path) -> None:
    url, log = served
    before = _lines(log)
    outcome = _drive(testnet, "jmeter", url, tmp_path, "tools: {jmeter: {heap: 256m}}\n")
    logged = _lines(log) - before
    assert outcome["exit"] == 0 and outcome["failed"] == [] and outcome["bad"] == 0, outcome
    assert outcome["total"] <= logged <= outcome["total"] + CONCURRENCY, (outcome["total"], logged)
    gen1, gen2 = (testnet.machines[role].address for role in ("gen1", "gen2"))
    assert f"{gen1}:1099: " in outcome["notes"][0] and f"{gen2}:1100: " in outcome["notes"][0]


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


@pytest.mark.parametrize("tool, options", [("locust", "tools: {locust: {workers_per_host: 1}}\n"),
                                           ("jmeter", "tools: {jmeter: {heap: 256m}}\n")])
def test_toolbench_run_hands_a_tool_with_its_own_distribution_the_whole_fleet(
        testnet: netns.TestNet, served: tuple[str, Path], tmp_path: Path, tool: str, options: str) -> None:
    url, log = served
    since = log.stat().st_size if log.exists() else 0
    path = scaleout_scenario(testnet, tmp_path, tool, "{duration: 3s}", options)
    path.write_text(path.read_text().replace(f"http://{testnet.machines['target'].address}:8080/", url))
    assert url in path.read_text()
    done, results, _ = run_in_ctl(testnet, path, tmp_path / "reports")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    (result,) = results
    assert result.outcome.status is Status.OK, result.outcome.error
    assert [(p.name, p.status) for p in result.generators] == [("gen1", Status.OK), ("gen2", Status.OK)]
    seen = by_client(log, since)
    gen1, gen2 = (testnet.machines[role].address for role in ("gen1", "gen2"))
    total = result.measurement.counts.requests_total
    assert seen[gen1] > 0 and seen[gen2] > 0  # both generators loaded the target
    assert total is not None and total <= seen[gen1] + seen[gen2] <= total + CONCURRENCY, (total, seen)
    duration = result.measurement.timing.duration_s
    assert duration is not None and (duration >= 2.7) == (not any("s of load in the 3s asked" in n for n in result.notes))
