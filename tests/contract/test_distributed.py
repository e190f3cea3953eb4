"""The tools' own distributed modes, on one box: a Locust master here with workers on two
generators, a JMeter controller here with a server on each of two generators; one generator
is this machine, the other the same machine over a real sshd (tests/helpers/sshd_server.py). Each
merged count is checked against the access log of the nginx that served the requests."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import socket
from pathlib import Path
from typing import Iterator

import pytest

from helpers.logged_nginx import LoggedNginx, logged_nginx, need_nginx
from helpers.sshd_server import Sshd
from toolbench.contract.adapter import Found
from toolbench.contract.checked import parse_checked
from toolbench.contract.distributed import Generator, Outcome
from toolbench.contract.registry import get
from toolbench.hosts.local import LocalHost
from toolbench.hosts.ssh import SSHHost
from toolbench.run import plan
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration
CONCURRENCY = 4


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoggedNginx]:
    need_nginx()
    with logged_nginx(tmp_path_factory.mktemp("nginx")) as running:
        yield running


@pytest.fixture(scope="module")
def far(sshd: Sshd) -> Iterator[SSHHost]:
    with SSHHost(sshd.spec(), known_hosts=sshd.known_hosts) as host:
        yield host


def _cell(tmp_path: Path, tool: str, base_url: str, extra: str = "") -> plan.Cell:
    path = tmp_path / "two.yaml"
    path.write_text(f"name: two\ntarget: {{url: '{base_url}'}}\nmatrix: {{tool: [{tool}], concurrency: [{CONCURRENCY}]}}\n"
                    f"stop: {{duration: 3s}}\ntimeout: 120s\n{extra}")
    (planned,) = plan.expand(scenario.load(path))
    return planned.cell.at(base_url)


def _generators(tool: str, far: SSHHost, **extra: object) -> list[Generator]:
    adapter = get(tool)
    gens = []
    for host in (LocalHost(), far):
        found = adapter.detect(host)
        if not isinstance(found, Found):
            pytest.skip(f"{tool} is not installed on {host.label}: {found.reason}")
        gens.append(Generator(host, found, **extra))  # type: ignore[arg-type]
    return gens


def _run(tool: str, cell: plan.Cell, gens: list[Generator], target: LoggedNginx, workdir: Path) -> Outcome:
    """One distributed run, checked as every one must be: the controller ended well, every part
    too, nothing failed, and nginx logged what the tool counted."""
    adapter = get(tool)
    distributed = adapter.distributed()
    assert distributed is not None and distributed.supports(cell, len(gens)).ok
    before = len(target.lines())
    workdir.mkdir()
    outcome = distributed.run(cell, workdir, gens[0].found, gens, here=LocalHost())
    served = len(target.lines()) - before
    assert outcome.completed.exit_code == 0, (workdir / "stdout.txt").read_text()[-2000:]
    assert outcome.failed_parts == [], [p.error for p in outcome.parts]
    assert [p.label for p in outcome.parts] == [gen.label for gen in gens]
    measured = parse_checked(adapter, outcome.raw)
    total = measured.counts.requests_total
    assert total and measured.counts.requests_failed == 0
    # A request in flight when the tool stops its users may reach nginx's log uncounted: at most one per user.
    assert total <= served <= total + CONCURRENCY, (total, served)
    # Each generator's own figures, told apart from the tool's output, add up to the merge.
    mine = [p.measurement.counts.requests_total if p.measurement else p.why_no_figures for p in outcome.parts]
    assert all(isinstance(n, int) and n > 0 for n in mine) and sum(mine) == total, (mine, total)
    return outcome


def test_locust_master_here_and_a_worker_on_each_of_two_generators(target: LoggedNginx, far: SSHHost,
                                                                  tmp_path: Path) -> None:
    cell = _cell(tmp_path, "locust", target.base_url)
    outcome = _run("locust", cell, _generators("locust", far, workers=1), target, tmp_path / "cell")
    assert "2 workers on 2 generators" in outcome.notes[0]


def _free_block(count: int) -> int:
    """The first of `count` consecutive ports free on 127.0.0.1, below the ephemeral range: there,
    the outgoing connections of whatever else runs on this machine cannot take one meanwhile."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    chooser = random.Random(os.getpid())
    for _ in range(50):
        base = chooser.randrange(10000, max(10001, low - count))
        try:
            with contextlib.ExitStack() as held:
                for port in range(base, base + count):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    pytest.skip(f"no {count} consecutive free ports on 127.0.0.1 below {low}")


def test_jmeter_controller_here_and_a_server_on_each_of_two_generators(target: LoggedNginx, far: SSHHost,
                                                                       tmp_path: Path) -> None:
    base = _free_block(7)  # one block, so the three ranges cannot overlap: servers 2, their objects 2, controller 3
    ports = f"server_port: {base}, rmi_port: {base + 2}, client_rmi_port: {base + 4}"
    cell = _cell(tmp_path, "jmeter", target.base_url, f"tools: {{jmeter: {{heap: 256m, {ports}}}}}\n")
    distributed = get("jmeter").distributed()
    assert distributed is not None
    assert not distributed.supports(dataclasses.replace(cell, concurrency=3), 2).ok  # one plan for every server
    outcome = _run("jmeter", cell, _generators("jmeter", far), target, tmp_path / "cell")
    total = parse_checked(get("jmeter"), outcome.raw).counts.requests_total
    mine = [part.measurement.counts.requests_total for part in outcome.parts if part.measurement]
    said = ", ".join(f"127.0.0.1:{port}: {n}" for port, n in zip(_ports(cell), mine))
    assert sum(mine) == total and f"samples by server: {said}" in outcome.notes[0], outcome.notes
    assert "server.rmi.ssl.disable=true" in outcome.notes[1]
    assert all((part.folder / "server.log").exists() for part in outcome.parts)  # fetched from each generator


def _ports(cell: plan.Cell) -> list[int]:
    return [cell.options["server_port"], cell.options["server_port"] + 1]
