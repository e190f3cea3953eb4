"""Machines on one box for the tests of several generators: network namespaces joined by a
bridge, each with an address of the benchmarking range (198.18.0.0/15, RFC 2544) given inside
the namespace only, and an sshd of its own (the session fixture `testnet` of
tests/conftest.py). The root namespace gets no address: whatever talks to the machines (the
toolbench under test too) runs inside one of them.

Every name carries this process's id (`tbn<pid hex>-…`), so that sessions running side by
side do not collide and a crashed session's leftovers are recognised by their dead owner and
removed by the next one.

The same machines for a user, outside pytest (scenarios/scale-out.yaml runs on them), as root:

    .venv/bin/python tests/helpers/netns.py up     # tbn-ctl, tbn-target, tbn-gen1, tbn-gen2; nginx in tbn-target
    .venv/bin/python tests/helpers/netns.py down   # every process in them, then the namespaces and the bridge

Both are idempotent. Their names carry no pid (`tbn-…`; a `tag` of letters other than a-f goes
after `tbn`), so a test session leaves them alone; their keys, known_hosts and logs are in STATE."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator, Sequence

import psutil
import pytest

from helpers import sshd_server

PREFIX = "tbn"
SUBNET = "198.18.0"  # the namespaces' addresses: SUBNET.2, .3, ... /24
ROLES = ("ctl", "target", "gen1", "gen2")  # in this order: ctl at .2, target .3, gen1 .4, gen2 .5
STATE = Path("/run/toolbench-testnet")  # `up`'s keys, known_hosts, logs and pids: gone with a reboot, as the net is
NGINX_PORT = 8080
_NGINX = """\
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log;
daemon off;
events {{ worker_connections 1024; }}
http {{
    access_log {folder}/access.log;
    client_body_temp_path {folder}; proxy_temp_path {folder}; fastcgi_temp_path {folder};
    uwsgi_temp_path {folder}; scgi_temp_path {folder};
    server {{
        listen {address}:{port};
        location / {{ return 200 "hello\\n"; }}
    }}
}}
"""
_OWNED = re.compile(rf"^{PREFIX}([0-9a-f]+)-")


@dataclass(frozen=True)
class Machine:
    """One namespace: its name, its address there, and its sshd once started."""

    name: str
    address: str
    sshd: sshd_server.Sshd | None = None

    def prefix(self) -> tuple[str, ...]:
        """Put before a command to run it inside this namespace."""
        return ("ip", "netns", "exec", self.name)


@dataclass
class TestNet:
    folder: Path
    tag: str = field(default_factory=lambda: f"{os.getpid():x}")
    machines: dict[str, Machine] = field(default_factory=dict)
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _client_key: Path | None = None

    @property
    def bridge(self) -> str:
        return f"{PREFIX}{self.tag}-b"

    def create_bridge(self) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("link", "set", self.bridge, "up")

    def add(self, role: str) -> Machine:
        """A namespace named for `role`, on the bridge, with its address and loopback up."""
        index = len(self.machines) + 1
        name, outside, inside = f"{PREFIX}{self.tag}-{role}", f"{PREFIX}{self.tag}-{index}", f"{PREFIX}{self.tag}-{index}p"
        address = f"{SUBNET}.{index + 1}"
        _ip("netns", "add", name)
        self.machines[role] = Machine(name, address)
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", name)
        _ip("link", "set", outside, "master", self.bridge, "up")
        _ip("-n", name, "link", "set", inside, "name", "eth0")
        _ip("-n", name, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", name, "link", "set", "eth0", "up")
        _ip("-n", name, "link", "set", "lo", "up")
        return self.machines[role]

    def start_sshd(self, role: str) -> Machine:
        """An sshd on port 22 of the machine's address, its host key its own; one client key
        logs in everywhere."""
        machine = self.machines[role]
        folder = self.folder / f"sshd-{role}-{len(self._procs)}"  # a restarted one gets a folder of its own
        folder.mkdir()
        if self._client_key is None:
            self._client_key = self.folder / "client_key"
            sshd_server.keygen(self._client_key)
        proc, server = sshd_server.start(folder, machine.address, 22, machine.prefix(), self._client_key)
        self._procs.append(proc)
        machine = Machine(machine.name, machine.address, server)
        self.machines[role] = machine
        return machine

    def known_hosts(self) -> Path:
        """Every sshd's host key, in one known_hosts file."""
        path = self.folder / "known_hosts"
        path.write_text("".join(m.sshd.known_hosts.read_text() for m in self.machines.values() if m.sshd))
        return path

    def spawn(self, role: str, argv: Sequence[str], log: Path, cwd: Path | None = None) -> subprocess.Popen[bytes]:
        """A process inside the machine, stopped by its pid at teardown."""
        with open(log, "wb") as out:
            proc = subprocess.Popen([*self.machines[role].prefix(), *argv], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=cwd, start_new_session=True)
        self._procs.append(proc)
        return proc

    def run(self, role: str, argv: Sequence[str], timeout_s: float = 120.0,
            stdout: IO[bytes] | int = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
        """A command inside the machine, to its end (bounded by `timeout_s`)."""
        return subprocess.run([*self.machines[role].prefix(), *argv], stdout=stdout, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, timeout=timeout_s, check=False)

    def start_nginx(self, folder: Path, port: int = NGINX_PORT) -> Path:
        """nginx in `target` at its address, answering every path; its access log (one line per
        request: the client's address first, its User-Agent last)."""
        address = self.machines["target"].address
        (folder / "nginx.conf").write_text(_NGINX.format(folder=folder, address=address, port=port))
        self.spawn("target", ["/usr/sbin/nginx", "-c", str(folder / "nginx.conf")], folder / "stdout.txt")
        deadline = time.monotonic() + 10
        while not (folder / "nginx.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not (folder / "nginx.pid").exists():
            raise RuntimeError(f"nginx did not start in the target namespace: {(folder / 'error.log').read_text()}")
        return folder / "access.log"

    def close(self) -> None:
        """Our processes by pid (each with what it started), then the namespaces and the bridge."""
        for proc in reversed(self._procs):
            stop_tree(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        for index, machine in enumerate(self.machines.values(), 1):
            _del_veth(self.tag, index)
            _ip("netns", "del", machine.name, check=False)
        _ip("link", "del", self.bridge, check=False)


def stop_tree(pid: int) -> None:
    """Kills a process we started and every process it started (an sshd's sessions too)."""
    try:
        parent = psutil.Process(pid)
        # The parent first: an nginx master killed after its workers forks a new one in between,
        # which then outlives the test (seen once at the end of a suite).
        family = [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for proc in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()


def usable() -> str | None:
    """Why namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    if not sshd_server.SSHD.exists() or shutil.which("ssh-keygen") is None:
        return "openssh-server is not installed (scripts/install.sh installs it)"
    probe = f"{PREFIX}{os.getpid():x}-probe"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    return None


def remove_leftovers() -> list[str]:
    """Namespaces and links of ours whose owning process is gone (a crashed session)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=False).stdout
    spaces = [line.split()[0] for line in listed.splitlines() if line.strip()]
    found = spaces + [row.split(":")[1].strip().split("@")[0] for row in links.splitlines() if row.count(":") >= 2]
    removed = []
    for name in found:  # the namespaces first: deleting one deletes its veth pair
        owner = _OWNED.match(name)
        if owner is None or psutil.pid_exists(int(owner.group(1), 16)):
            continue
        kind = ("netns", "del", name) if name in spaces else ("link", "del", name)
        if _ip(*kind, check=False):
            removed.append(name)
    return removed


def testnet(folder: Path, roles: Sequence[str]) -> Iterator[TestNet]:
    """The `testnet` fixture's body: a namespace per role, each with its sshd; torn down
    afterwards whatever happened."""
    why = usable()
    if why is not None:
        pytest.skip(why)
    remove_leftovers()
    net = TestNet(folder)
    try:
        net.create_bridge()
        for role in roles:
            net.add(role)
            net.start_sshd(role)
        yield net
    finally:
        net.close()


def _ip(*args: str, check: bool = True) -> bool:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.returncode == 0


def up(state: Path = STATE, tag: str = "") -> TestNet:
    """The user's test net (see the module's doc): made anew after a `down` of whatever part
    of an earlier one is left; its processes outlive this one, their pids in STATE/pids.json."""
    down(state, tag)
    state.mkdir(mode=0o700, parents=True)
    net = TestNet(state, tag=tag)
    try:
        net.create_bridge()
        for role in ROLES:
            net.add(role)
            net.start_sshd(role)
        net.known_hosts()
        (state / "nginx").mkdir()
        net.start_nginx(state / "nginx")
    except BaseException:
        net.close()
        raise
    pids = [{"pid": p.pid, "create_time": psutil.Process(p.pid).create_time()} for p in net._procs]
    (state / "pids.json").write_text(json.dumps(pids))
    return net


def is_up(state: Path = STATE, tag: str = "") -> bool:
    """Every namespace there and every process `up` started alive."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    spaces = {line.split()[0] for line in listed.splitlines() if line.strip()}
    try:
        pids = json.loads((state / "pids.json").read_text())
    except (OSError, ValueError):
        return False
    return {f"{PREFIX}{tag}-{role}" for role in ROLES} <= spaces and all(_ours(entry) for entry in pids)


def down(state: Path = STATE, tag: str = "") -> list[str]:
    """Whatever of the user's test net exists, removed: what `up` started (by its recorded pid
    and create time) and anything else running inside its namespaces, then the namespaces,
    the bridge and STATE. Returns what was removed."""
    removed = []
    with contextlib.suppress(OSError, ValueError):
        for entry in json.loads((state / "pids.json").read_text()):
            if _ours(entry):
                stop_tree(entry["pid"])
                removed.append(f"pid {entry['pid']}")
    for role in ROLES:
        name = f"{PREFIX}{tag}-{role}"
        inside = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, check=False)
        for pid in (int(word) for word in inside.stdout.split() if word.isdigit()):
            stop_tree(pid)
        _del_veth(tag, ROLES.index(role) + 1)
        if _ip("netns", "del", name, check=False):
            removed.append(name)
    bridge = TestNet(state, tag=tag).bridge
    if _ip("link", "del", bridge, check=False):
        removed.append(bridge)
    shutil.rmtree(state, ignore_errors=True)
    return removed


def _del_veth(tag: str, index: int) -> None:
    """The machine's veth pair, removed now: the kernel frees the pair of a deleted namespace
    later, in the background, and an `up` right after a `down` on a busy machine then found
    the old name still taken ("File exists")."""
    _ip("link", "del", f"{PREFIX}{tag}-{index}", check=False)


def _ours(entry: dict) -> bool:
    try:
        return abs(psutil.Process(int(entry["pid"])).create_time() - float(entry["create_time"])) < 0.01
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("up", "down"):
        print("usage: python tests/helpers/netns.py up|down (as root)", file=sys.stderr)
        return 2
    why = usable()
    if why is not None:
        print(f"tests/helpers/netns.py: cannot make the test network: {why}", file=sys.stderr)
        return 1
    if argv[0] == "down":
        removed = down()
        print(f"removed: {', '.join(removed)}" if removed else "nothing to remove: the test network is not up")
        return 0
    if is_up():
        print(f"already up: {', '.join(f'{PREFIX}-{role}' for role in ROLES)} ({STATE})")
        return 0
    try:
        net = up()
    except (RuntimeError, OSError, pytest.fail.Exception, pytest.skip.Exception) as exc:
        down()
        print(f"tests/helpers/netns.py: cannot make the test network: {getattr(exc, 'msg', None) or exc}", file=sys.stderr)
        return 1
    for role, machine in net.machines.items():
        print(f"{machine.name}: {machine.address} (sshd as {machine.sshd.user if machine.sshd else '?'})")
    print(f"nginx: http://{net.machines['target'].address}:{NGINX_PORT}/ (log {STATE / 'nginx' / 'access.log'})")
    print(f"key: {STATE / 'client_key'}  known_hosts: {STATE / 'known_hosts'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
