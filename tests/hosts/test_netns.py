"""The test network itself (tests/helpers/netns.py): each machine answers SSH at its own address,
seen from another machine, and a crashed session's leftovers are removed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from helpers import netns

_WHO = """
import json, sys
from toolbench.hosts import ssh
from toolbench.scenario.read import HostSpec
from pathlib import Path
spec = HostSpec(address=sys.argv[1], port=22, user=sys.argv[2], key=sys.argv[3])
with ssh.connect(spec, known_hosts=Path(sys.argv[4])) as host:
    print(json.dumps(host.capture(["ip", "-o", "-4", "addr", "show", "dev", "eth0"]).stdout))
"""


def test_each_generator_answers_ssh_at_its_address_from_the_controller(testnet: netns.TestNet) -> None:
    known = testnet.known_hosts()
    for role in ("gen1", "gen2"):
        machine = testnet.machines[role]
        assert machine.sshd is not None
        done = testnet.run("ctl", [sys.executable, "-c", _WHO, machine.address, machine.sshd.user,
                                   str(machine.sshd.client_key), str(known)], timeout_s=60)
        assert done.returncode == 0, done.stderr.decode()
        assert f"inet {machine.address}/24" in json.loads(done.stdout)


def test_the_root_namespace_has_no_address_of_the_test_range(testnet: netns.TestNet) -> None:
    shown = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True, check=True).stdout
    assert netns.SUBNET not in shown
    assert any(m.address in testnet.run(m_role, ["ip", "-o", "-4", "addr"]).stdout.decode()
               for m_role, m in testnet.machines.items())


def test_leftovers_of_a_dead_owner_are_removed_and_a_live_ones_kept(testnet: netns.TestNet) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"{netns.PREFIX}{dead.pid:x}-gen1"
    subprocess.run(["ip", "netns", "add", stale], check=True)
    try:
        removed = netns.remove_leftovers()
    finally:
        subprocess.run(["ip", "netns", "del", stale], capture_output=True, check=False)
    assert stale in removed
    assert all(m.name not in removed for m in testnet.machines.values())
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert all(m.name in listed for m in testnet.machines.values())


def test_without_root_the_machines_are_skipped_with_the_reason(monkeypatch):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    assert netns.usable() == "network namespaces need root (ip netns add)"
    with pytest.raises(pytest.skip.Exception, match="need root"):
        next(netns.testnet(Path("/nonexistent"), ("ctl",)))


def test_up_and_down_outside_pytest_are_idempotent_and_leave_nothing(tmp_path: Path) -> None:
    """`tests/helpers/netns.py up|down` as a user runs them (another tag and folder than theirs): a
    second `up` finds it up, the generators answer SSH from ctl and nginx answers from a
    generator; `down` stops every process in the machines and removes them, twice harmlessly."""
    why = netns.usable()
    if why is not None:
        pytest.skip(why)
    state, tag = tmp_path / "state", "x"
    try:
        net = netns.up(state, tag)
        assert netns.is_up(state, tag)
        pids = [p.pid for p in net._procs]
        names = [m.name for m in net.machines.values()]
        assert names == [f"tbnx-{role}" for role in netns.ROLES]
        gen1 = net.machines["gen1"]
        done = net.run("ctl", [sys.executable, "-c", _WHO, gen1.address, gen1.sshd.user, str(state / "client_key"),
                               str(state / "known_hosts")], timeout_s=60)
        assert done.returncode == 0 and f"inet {gen1.address}/24" in json.loads(done.stdout), done.stderr.decode()
        fetched = net.run("gen2", ["curl", "-s", f"http://{net.machines['target'].address}:{netns.NGINX_PORT}/"])
        assert fetched.stdout == b"hello\n"
        assert netns.up(state, tag).machines.keys() == net.machines.keys()  # made anew, the same machines
        assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                       for pid in pids)  # the first one's processes were stopped by the second `up`
    finally:
        removed = netns.down(state, tag)
    assert set(names) | {"tbnx-b"} <= set(removed)
    assert netns.down(state, tag) == [] and not state.exists() and not netns.is_up(state, tag)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert not any(name in listed for name in names)
