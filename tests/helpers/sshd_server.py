"""A real sshd on 127.0.0.1 with its own keys, for the tests of remote hosts (the module
fixture `sshd` of tests/conftest.py). The remote machine is this
machine, so what it reports can be checked against the local one."""
from __future__ import annotations

import getpass
import resource
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from toolbench.contract.host import free_port
from toolbench.hosts.ssh import SSHHost
from toolbench.scenario.read import HostSpec

SSHD = Path("/usr/sbin/sshd")
LOGIN_NOFILE_SOFT = 1536  # set on sshd, so the login's limit differs from pytest's own


@dataclass(frozen=True)
class Sshd:
    port: int
    user: str
    client_key: Path
    host_key_pub: Path
    known_hosts: Path  # lists the server's key
    folder: Path
    address: str = "127.0.0.1"
    pid: int | None = None  # the listening sshd's, for a test that stops it

    def spec(self, key: Path | None = None, port: int | None = None) -> HostSpec:
        return HostSpec(address=self.address, port=port or self.port, user=self.user,
                        key=str(key or self.client_key))


def keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def _login_limits() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (LOGIN_NOFILE_SOFT, hard))


def serve(tmp_path_factory: pytest.TempPathFactory, extra_config: str = "") -> Iterator[Sshd]:
    """The `sshd` fixture's body (tests/conftest.py): one server per test module.
    `extra_config`: more sshd_config lines (e.g. `SetEnv PATH=...` for a sparse login)."""
    if not SSHD.exists() or shutil.which("ssh-keygen") is None:
        pytest.skip("openssh-server is not installed (scripts/install.sh installs it)")
    folder = tmp_path_factory.mktemp("sshd")
    proc, server = start(folder, "127.0.0.1", free_port(), extra_config=extra_config)
    try:
        yield server
    finally:
        stop(proc)


def start(folder: Path, address: str, port: int, prefix: tuple[str, ...] = (),
          client_key: Path | None = None, extra_config: str = "") -> tuple[subprocess.Popen[bytes], Sshd]:
    """An sshd listening on `address`:`port`, started with `prefix` before it (e.g.
    `ip netns exec NS`, to run inside a network namespace); keys and known_hosts in `folder`.
    `client_key` is a key made earlier to log in with (one for several servers)."""
    keygen(folder / "host_key")
    if client_key is None:
        client_key = folder / "client_key"
        keygen(client_key)
    shutil.copy(client_key.with_name(client_key.name + ".pub"), folder / "authorized_keys")
    (folder / "sshd_config").write_text(
        f"Port {port}\nListenAddress {address}\nHostKey {folder}/host_key\n"
        f"AuthorizedKeysFile {folder}/authorized_keys\nPidFile {folder}/sshd.pid\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "UsePAM no\nStrictModes no\nSubsystem sftp internal-sftp\nLogLevel ERROR\n" + extra_config)
    try:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation folder
    except PermissionError:
        pytest.skip("/run/sshd is missing and cannot be created (not root)")
    with open(folder / "sshd.log", "wb") as log:
        proc = subprocess.Popen([*prefix, str(SSHD), "-D", "-e", "-f", str(folder / "sshd_config")],
                                stdout=log, stderr=log, stdin=subprocess.DEVNULL, preexec_fn=_login_limits)
    try:
        _wait_log_or_port(address, port, proc, folder / "sshd.log", listening=not prefix)
        host_pub = (folder / "host_key.pub").read_text().split()
        where = address if port == 22 else f"[{address}]:{port}"
        (folder / "known_hosts").write_text(f"{where} {host_pub[0]} {host_pub[1]}\n")
    except BaseException:
        stop(proc)
        raise
    return proc, Sshd(port, getpass.getuser(), client_key, folder / "host_key.pub", folder / "known_hosts", folder,
                      address, proc.pid)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_log_or_port(address: str, port: int, proc: subprocess.Popen[bytes], log: Path, listening: bool) -> None:
    """Inside another network namespace the port cannot be tried from here: sshd there is
    taken as up once its pid file is written (it writes it after binding)."""
    if listening:
        _wait_port(port, proc, log)
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"sshd exited: {log.read_text()}")
        if (log.parent / "sshd.pid").exists():
            return
        time.sleep(0.05)
    pytest.fail("sshd did not write its pid file within 10 s")


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"sshd exited: {log.read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail("sshd did not listen within 10 s")


def alive_remotely(sshd: Sshd, pid: int) -> bool:
    """Asked over a second connection, as a separate machine would be. A zombie is dead: where
    pid 1 does not reap orphans (some containers), the killed child stays one."""
    script = 'kill -0 "$1" 2>/dev/null && ! grep -q "^State:[[:space:]]*Z" "/proc/$1/status"'
    with SSHHost(sshd.spec(), known_hosts=sshd.known_hosts) as other:
        return other.capture(["sh", "-c", script, "sh", str(pid)]).exit_code == 0
