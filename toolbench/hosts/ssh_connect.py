"""Reaching a machine over SSH (paramiko): its host key checked, the login authenticated,
and a failure told in one line.

Host keys are checked against ~/.ssh/known_hosts, /etc/ssh/ssh_known_hosts and the file the
caller names; an unknown key is refused unless the caller trusts it explicitly, which then
records it. toolbench.hosts.ssh.SSHHost runs commands and moves files over the client made here."""
from __future__ import annotations

import base64
import hashlib
import logging
import shlex
import socket
from pathlib import Path

import paramiko
from paramiko.hostkeys import HostKeyEntry
from paramiko.ssh_exception import NoValidConnectionsError

from toolbench.errors import HostError
from toolbench.scenario.read import HostSpec

_SYSTEM_KNOWN_HOSTS = (Path("~/.ssh/known_hosts"), Path("/etc/ssh/ssh_known_hosts"))


def open_client(spec: HostSpec, user: str, label: str, known_hosts: Path | None, trust: bool,
                timeout_s: float) -> paramiko.SSHClient:
    """A client connected to `spec` as `user`, its host key checked; `label` names the
    host in messages."""
    quiet_paramiko()
    client = paramiko.SSHClient()
    try:
        for path in _SYSTEM_KNOWN_HOSTS:
            if path.expanduser().is_file():
                client.load_system_host_keys(str(path.expanduser()))
        if known_hosts is not None and known_hosts.is_file():
            client.load_host_keys(str(known_hosts))
        record_to = known_hosts or _SYSTEM_KNOWN_HOSTS[0].expanduser()
        client.set_missing_host_key_policy(_KeyPolicy(label, spec, trust, record_to))
        client.connect(spec.address, port=spec.port, username=user, **_auth(spec, label),
                       timeout=timeout_s, banner_timeout=timeout_s, auth_timeout=timeout_s)
    except HostError:
        client.close()
        raise
    except Exception as exc:  # paramiko and the socket layer raise many kinds; each becomes one line
        client.close()
        raise HostError(f"{label}: cannot connect: {why(exc, timeout_s)}") from None
    transport = client.get_transport()
    if transport is not None:
        transport.set_keepalive(15)  # a long run must notice a dead link
    return client


def _auth(spec: HostSpec, label: str) -> dict[str, object]:
    if spec.key is None:
        return {"allow_agent": True, "look_for_keys": True}
    path = Path(spec.key).expanduser()
    if not path.is_file():
        raise HostError(f"{label}: key file {path} not found")
    # Only the key the scenario names, so that a wrong key fails instead of another one passing.
    return {"key_filename": str(path), "allow_agent": False, "look_for_keys": False}


class _KeyPolicy(paramiko.MissingHostKeyPolicy):
    """Refuses a host key that no known_hosts file lists, unless trusting it was asked for."""

    def __init__(self, label: str, spec: HostSpec, trust: bool, record_to: Path) -> None:
        self.label, self.spec, self.trust, self.record_to = label, spec, trust, record_to

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        if not self.trust:
            port = f"-p {self.spec.port} " if self.spec.port != 22 else ""
            raise HostError(
                f"{self.label}: unknown host key {key.get_name()} {fingerprint(key)}; if that is the "
                f"machine's key, trust it explicitly (toolbench run --trust-new-host-key) or add it with "
                f"`ssh-keyscan {port}{shlex.quote(self.spec.address)} >> ~/.ssh/known_hosts`")
        try:
            self.record_to.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with open(self.record_to, "a", encoding="ascii") as fh:
                fh.write(HostKeyEntry([hostname], key).to_line())
        except OSError as exc:
            raise HostError(f"{self.label}: cannot record the host key in {self.record_to}: {exc.strerror}") from None
        client.get_host_keys().add(hostname, key.get_name(), key)


def fingerprint(key: paramiko.PKey) -> str:
    """As ssh-keygen -l shows it: SHA256:<base64 without padding>."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def quiet_paramiko() -> None:
    """paramiko logs a failed connection with its traceback; with no handler configured,
    Python would print it. toolbench reports the failure itself, in one line."""
    logger = logging.getLogger("paramiko")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())


def why(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, paramiko.BadHostKeyException):
        return (f"the host key changed: it is {exc.key.get_name()} {fingerprint(exc.key)}, known_hosts "
                f"says {fingerprint(exc.expected_key)}; if the machine was reinstalled, remove its old line")
    if isinstance(exc, paramiko.PasswordRequiredException):
        return "the key file is protected by a passphrase; load it into ssh-agent and leave `key` out"
    if isinstance(exc, paramiko.AuthenticationException):
        return "authentication failed (no key the server accepts)"
    if isinstance(exc, NoValidConnectionsError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "cannot resolve the address"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return f"no answer within {timeout_s:g}s"
    if isinstance(exc, OSError):
        return os_why(exc)
    if "protocol banner" in str(exc):
        return "no SSH server answers on that port (no SSH banner)"
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def os_why(exc: OSError) -> str:
    if exc.strerror:
        return exc.strerror
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
