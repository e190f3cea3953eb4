"""A remote machine over SSH (paramiko), behind the same `Host` interface as the local one.

The connection, its host key check and authentication are made in ssh_connect; the remote
processes are watched by ssh_process. Every value that reaches the remote shell goes
through shlex.quote."""
from __future__ import annotations

import getpass
import io
import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import IO, Mapping, Sequence

import paramiko

from toolbench.contract.host import Captured, Completed, Facts, Host, Limit
from toolbench.errors import HostError
from toolbench.hosts.local import RLIMITS, LocalHost, parse_proc_limits
from toolbench.hosts.ssh_connect import open_client, os_why, why
from toolbench.hosts.ssh_process import RemoteProcess, Streams, launch_line
from toolbench.scenario.method import cpu_list
from toolbench.scenario.read import HostSpec

CONNECT_TIMEOUT_S = 10.0
_SYSCTL_KEY = re.compile(r"[A-Za-z0-9_-]+([./][A-Za-z0-9_-]+)*")
_MARK = "@@toolbench-section@@"
# Searches $PATH as shutil.which does: a shell builtin of the same name does not count.
_WHICH = ('case "$1" in */*) [ -f "$1" ] && [ -x "$1" ] && { echo "$1"; exit 0; }; exit 1;; esac; '
          'IFS=:; for d in $PATH; do [ -f "$d/$1" ] && [ -x "$d/$1" ] && { echo "$d/$1"; exit 0; }; done; exit 1')
_FACTS = (f"uname -n; nproc; uname -r; uname -s; echo {_MARK}; cat /proc/meminfo; echo {_MARK}; "
          f"cat /proc/cpuinfo; echo {_MARK}; cat /etc/os-release 2>/dev/null; true")


def connect(spec: HostSpec, *, known_hosts: Path | None = None, trust_new_key: bool = False) -> Host:
    """The host a scenario names: this machine for `local`, else an SSH connection."""
    if spec.is_local:
        return LocalHost()
    return SSHHost(spec, known_hosts=known_hosts, trust_new_key=trust_new_key)


class SSHHost:
    """A machine reached over SSH. Paths passed as `cwd` or `remote_path` are on that
    machine; `stdout`/`stderr`/`local_path` are on this one. `limits` are ulimits raised
    for every command started, as LocalHost does (through prlimit, on the remote side); `cpus`,
    when set, the CPUs every command started runs on (through taskset: the placement)."""

    remote = True

    def __init__(self, spec: HostSpec, *, known_hosts: Path | None = None, trust_new_key: bool = False,
                 timeout_s: float = CONNECT_TIMEOUT_S, _client: paramiko.SSHClient | None = None,
                 _limits: Mapping[str, int] | None = None, _cpus: tuple[int, ...] | None = None) -> None:
        self.spec = spec
        self.user = spec.user or getpass.getuser()
        self.label = f"{self.user}@{spec.address}:{spec.port}"
        self.limits = dict(_limits or {})
        self.cpus = _cpus
        self._client = _client or open_client(spec, self.user, self.label, known_hosts, trust_new_key, timeout_s)
        self._sftp: paramiko.SFTPClient | None = None
        self._login: _Login | None = None

    # -- context and lifetime --------------------------------------------------------

    def __enter__(self) -> "SSHHost":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._sftp is not None:
            self._sftp.close()
            self._sftp = None
        self._client.close()

    def with_limits(self, wanted: Mapping[str, int]) -> "SSHHost":
        """The same connection, with these limits raised for every command started."""
        unknown = set(wanted) - set(RLIMITS)
        if unknown:
            raise HostError(f"{self.label}: unknown limit {sorted(unknown)[0]!r}")
        host = SSHHost(self.spec, _client=self._client, _limits={**self.limits, **wanted}, _cpus=self.cpus)
        host._login = self._login
        return host

    def with_cpus(self, cpus: tuple[int, ...]) -> "SSHHost":
        """The same connection, every command started on `cpus` there (taskset, which must be
        installed there: util-linux)."""
        if self.which("taskset") is None:
            raise HostError(f"{self.label}: taskset is not installed (util-linux): the placement needs it there")
        host = SSHHost(self.spec, _client=self._client, _limits=self.limits, _cpus=tuple(cpus))
        host._login = self._login
        return host

    # -- commands --------------------------------------------------------------------

    def which(self, program: str) -> str | None:
        captured = self._shell(_WHICH, program)
        path = captured.stdout.strip()
        return path if captured.exit_code == 0 and path.startswith("/") else None

    def capture(self, argv: list[str], timeout_s: float = 10.0) -> Captured:
        out, err = io.BytesIO(), io.BytesIO()
        proc = self._start(argv, None, out, err, None)
        completed = proc.wait(timeout_s)
        if completed.timed_out:
            raise HostError(f"{self.label}: {' '.join(argv)}: no answer within {timeout_s:g}s")
        if completed.interrupted:
            raise KeyboardInterrupt
        assert completed.exit_code is not None
        return Captured(completed.exit_code, out.getvalue().decode(errors="replace"),
                        err.getvalue().decode(errors="replace"))

    def start(self, argv: list[str], cwd: str | PurePath, stdout: Path, stderr: Path,
              env: dict[str, str] | None = None) -> RemoteProcess:
        """Starts the tool in `cwd` (remote); its output streams into the local files,
        which are closed when the process has been waited for."""
        out = open(stdout, "wb")
        err = open(stderr, "wb")
        try:
            return self._start(argv, cwd, out, err, env, close_after=True)
        except BaseException:
            out.close()
            err.close()
            raise

    def run(self, argv: list[str], cwd: str | PurePath, stdout: Path, stderr: Path, timeout_s: float,
            env: dict[str, str] | None = None) -> Completed:
        """Runs to completion or to the hard timeout, then kills the remote process group.
        Ctrl-C kills it too and reports the run as interrupted."""
        return self.start(argv, cwd, stdout, stderr, env).wait(timeout_s)

    def _start(self, argv: Sequence[str], cwd: str | PurePath | None, out: IO[bytes], err: IO[bytes],
               env: Mapping[str, str] | None, close_after: bool = False) -> RemoteProcess:
        taskset = ["taskset", "-c", cpu_list(self.cpus)] if self.cpus else []
        line = launch_line(argv, cwd, env, self._prlimit_args(), taskset)
        channel = self._exec(line, keep_input=True)  # its watcher's lifeline (ssh_process._WATCHED)
        return RemoteProcess(self.label, argv[0], channel, out, err, self._kill_group, close_after)

    def _kill_group(self, pgid: int) -> None:
        if pgid <= 1:
            return  # -0 and -1 would mean "our own group" and "everything": never
        try:
            # No `--`: dash's kill takes it for a pid; after the signal, "-N" is a group.
            self._shell('kill -KILL "-$1" 2>/dev/null; true', str(pgid))
        except HostError:
            pass  # the link is gone: nothing more can be done from here

    def _exec(self, command_line: str, timeout_s: float = CONNECT_TIMEOUT_S,
              keep_input: bool = False) -> paramiko.Channel:
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise HostError(f"{self.label}: the connection is closed")
        try:
            channel = transport.open_session(timeout=timeout_s)
            channel.exec_command(command_line)
            if not keep_input:
                channel.shutdown_write()  # the script's stdin is empty, as /dev/null is locally
        except (paramiko.SSHException, OSError) as exc:
            raise HostError(f"{self.label}: cannot run a command: {why(exc, timeout_s)}") from None
        return channel

    def conversation(self, script: str) -> paramiko.Channel:
        """A fixed script of toolbench's own in `sh`, its input kept open to talk to it."""
        return self._exec(" ".join(shlex.quote(word) for word in ("sh", "-c", script)), keep_input=True)

    def _shell(self, script: str, *args: str, timeout_s: float = 30.0) -> Captured:
        """A fixed script of toolbench's own, in `sh`, with quoted arguments."""
        channel = self._exec(" ".join(shlex.quote(word) for word in ("sh", "-c", script, "sh", *args)))
        out, err = io.BytesIO(), io.BytesIO()
        streams = Streams(channel, out, err)
        if not streams.pump_until(channel.exit_status_ready, time.monotonic() + timeout_s):
            channel.close()
            raise HostError(f"{self.label}: no answer within {timeout_s:g}s")
        streams.finish()
        return Captured(channel.recv_exit_status(), out.getvalue().decode(errors="replace"),
                        err.getvalue().decode(errors="replace"))

    # -- limits ----------------------------------------------------------------------

    def ulimit_nofile(self) -> Limit:
        """`ulimit -n` (soft, hard) of the login that runs the tools, before any raise."""
        captured = self._shell("ulimit -Sn; ulimit -Hn")
        values = captured.stdout.split()
        if captured.exit_code != 0 or len(values) != 2:
            raise HostError(f"{self.label}: cannot read ulimit -n: {captured.stderr.strip()}")
        return Limit(*(None if v == "unlimited" else int(v) for v in values))

    def process_limits(self, raised: bool = True) -> dict[str, Limit]:
        """The limits of a process started exactly as a tool is (with the raise), or of
        the plain login (`raised=False`), so that a check can show both."""
        captured = self.capture(["cat", "/proc/self/limits"]) if raised else self._shell("cat /proc/self/limits")
        if captured.exit_code != 0:
            raise HostError(f"{self.label}: cannot read /proc/self/limits: {captured.stderr.strip()}")
        return parse_proc_limits(captured.stdout)

    def _prlimit_args(self) -> list[str]:
        """prlimit options raising the login's limits as LocalHost raises its own: the soft
        limit up to what is wanted within the hard one; the hard one too as root; never lower."""
        if not self.limits:
            return []
        if self._login is None:
            captured = self._shell("id -u; cat /proc/self/limits")
            self._login = _Login(root=captured.stdout.split("\n", 1)[0].strip() == "0",
                                 limits=parse_proc_limits(captured.stdout))
        args = []
        for name, want in self.limits.items():
            have = self._login.limits.get(name)
            if have is None or have.soft is None or have.soft >= want:
                continue
            hard = have.hard
            if hard is not None and hard < want:
                hard = want if self._login.root else hard
            soft = want if hard is None else min(want, hard)
            args.append(f"--{name}={soft}:{'unlimited' if hard is None else hard}")
        return args

    # -- facts -----------------------------------------------------------------------

    def facts(self) -> Facts:
        captured = self._shell(_FACTS)
        sections = captured.stdout.split(_MARK + "\n")
        if captured.exit_code != 0 or len(sections) != 4:
            raise HostError(f"{self.label}: cannot read the machine's facts: {captured.stderr.strip()}")
        head, meminfo, cpuinfo, os_release = sections
        hostname, nproc, kernel, system = (head.splitlines() + ["", "", "", ""])[:4]
        memory_bytes = _meminfo_bytes(meminfo)
        if not nproc.isdigit() or memory_bytes is None:
            raise HostError(f"{self.label}: cannot read the CPU count or memory size (not Linux?)")
        return Facts(hostname=hostname, cpu_count=int(nproc),
                     cpu_model=_field(cpuinfo, "model name", ":") or "unknown",
                     memory_bytes=memory_bytes, kernel=kernel,
                     os=(_field(os_release, "PRETTY_NAME", "=") or system).strip('"'))

    def read_sysctl(self, key: str) -> str | None:
        """A sysctl value (`net.core.somaxconn`), None when the kernel has no such key."""
        if not _SYSCTL_KEY.fullmatch(key):
            raise HostError(f"{self.label}: {key!r} is not a sysctl key")
        captured = self._shell('cat -- "/proc/sys/$1" 2>/dev/null', key.replace(".", "/"))
        return captured.stdout.strip() if captured.exit_code == 0 else None

    # -- files -----------------------------------------------------------------------

    def mkdtemp(self) -> str:
        """A new private folder on the remote machine, for one run's files."""
        captured = self._shell('mktemp -d "${TMPDIR:-/tmp}/toolbench.XXXXXX"')
        path = captured.stdout.strip()
        if captured.exit_code != 0 or not path.startswith("/"):
            raise HostError(f"{self.label}: cannot make a temporary folder: {captured.stderr.strip()}")
        return path

    def workspace(self, workdir: Path) -> str:
        """A temporary folder there, removed by collect()."""
        return self.mkdtemp()

    def stage(self, workdir: Path, tool_dir: str | PurePath, names: Sequence[str]) -> None:
        for name in names:
            self.put(workdir / name, f"{tool_dir}/{name}")

    def collect(self, tool_dir: str | PurePath, names: Sequence[str], workdir: Path) -> None:
        try:
            for name in names:
                try:
                    self.get(f"{tool_dir}/{name}", workdir / name)
                except HostError:
                    pass  # the tool did not write it: the parser says what that means
        finally:
            self.remove_tree(str(tool_dir))

    def remove_tree(self, remote_path: str) -> None:
        """Removes a folder made by mkdtemp, with everything in it."""
        if not remote_path.startswith("/") or remote_path.rstrip("/") in ("", "/tmp") or ".." in remote_path:
            raise HostError(f"{self.label}: refusing to remove {remote_path!r}")
        self._shell('rm -rf -- "$1"', remote_path)

    def put(self, local_path: Path, remote_path: str) -> None:
        try:
            self._sftp_client().put(str(local_path), remote_path)
        except OSError as exc:
            raise HostError(f"{self.label}: cannot copy {local_path} to {remote_path}: {os_why(exc)}") from None

    def get(self, remote_path: str, local_path: Path) -> None:
        existed = local_path.exists()
        try:
            self._sftp_client().get(remote_path, str(local_path))
        except OSError as exc:
            # paramiko creates the local file before it opens the remote one: a file the tool
            # never wrote must not come back as an empty one.
            if not existed:
                local_path.unlink(missing_ok=True)
            raise HostError(f"{self.label}: cannot copy {remote_path} to {local_path}: {os_why(exc)}") from None

    def _sftp_client(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            try:
                self._sftp = self._client.open_sftp()
            except (paramiko.SSHException, OSError) as exc:
                raise HostError(f"{self.label}: no SFTP on this host: {why(exc, CONNECT_TIMEOUT_S)}") from None
        return self._sftp


@dataclass(frozen=True)
class _Login:
    """What the login that runs the tools may do about its limits."""

    root: bool
    limits: dict[str, Limit]


def _field(text: str, name: str, sep: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(name) and sep in line:
            key, value = line.split(sep, 1)
            if key.strip() == name:
                return value.strip()
    return None


def _meminfo_bytes(text: str) -> int | None:
    value = _field(text, "MemTotal", ":")
    if value is None or not value.split() or not value.split()[0].isdigit():
        return None
    return int(value.split()[0]) * 1024  # /proc/meminfo's kB are KiB
