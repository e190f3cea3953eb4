"""Prerequisites: the ulimits and kernel settings a run needs, checked on the host that
runs the tools, in a process started exactly as the tools are, and applied only on request.

The reference study set 65536 file handles and TCP sysctls on both machines before
anything ran; the Flask study hit "Too many open files" for want of it. toolbench checks
what the scenario asks (found / wanted / ok, into the manifest), adds advice about the
known traps for the scenario's concurrency, and refuses to run while a required
prerequisite is unmet, unless told to go on.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

from toolbench.contract.host import Host, Limit
from toolbench.errors import HostError, ToolbenchError
from toolbench.scenario import sysctls
from toolbench.scenario.read import Prerequisites

# Settings where more is better, or less; any other is compared for equality. A wanted
# value may also say it outright: ">=4096", "<=30".
AT_LEAST = frozenset({
    "net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog", "net.core.netdev_max_backlog", "fs.file-max",
    "fs.nr_open", "net.ipv4.tcp_max_tw_buckets", "net.core.rmem_max", "net.core.wmem_max",
    "net.ipv4.tcp_max_orphans", "net.netfilter.nf_conntrack_max", "kernel.threads-max"})
AT_MOST = frozenset({"net.ipv4.tcp_fin_timeout"})
PORT_RANGE = "net.ipv4.ip_local_port_range"
TW_RECYCLE = "net.ipv4.tcp_tw_recycle"
TW_REUSE = "net.ipv4.tcp_tw_reuse"
TIME_WAIT_S = 60  # Linux keeps a closed connection in TIME_WAIT for a fixed 60 s (TCP_TIMEWAIT_LEN)
FD_MARGIN = 64  # descriptors a tool needs besides its connections: libraries, logs, pipes
_KEY = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)+$")
_OPERATOR = re.compile(r"^\s*(>=|<=)\s*(.+)$")

TW_RECYCLE_NOTE = ("net.ipv4.tcp_tw_recycle no longer exists: Linux 4.12 removed it because it broke "
                   "connections from clients behind NAT; there is nothing to set. For outgoing connections "
                   "net.ipv4.tcp_tw_reuse=1 lets new connections reuse TIME_WAIT ports")


class PrerequisiteError(ToolbenchError):
    """A required prerequisite is unmet and the run was not told to go on."""


@dataclass(frozen=True)
class Finding:
    kind: str  # "ulimit", "sysctl", or "advice" (a known trap, checked for the scenario's concurrency)
    key: str
    wanted: str | None
    found: str | None
    ok: bool | None  # None: nothing to compare, e.g. a setting the kernel no longer has
    required: bool
    host: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def blocking(self) -> bool:
        return self.required and self.ok is False


@dataclass(frozen=True)
class Change:
    key: str
    before: str | None
    after: str
    undo: str  # the shell command that puts it back


@dataclass(frozen=True)
class Applied:
    changes: list[Change] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # what needed nothing, and why
    problems: list[str] = field(default_factory=list)  # what could not be applied, and why


def check(host: Host, prereqs: Prerequisites, concurrency: int | None = None) -> list[Finding]:
    """What the scenario asks, then the traps for its highest concurrency. Never raises for
    a value it cannot read: that is a finding."""
    findings = [_check_sysctl(host, key, wanted, prereqs.required) for key, wanted in prereqs.sysctl.items()]
    findings += _check_ulimits(host, prereqs)
    if concurrency is not None:
        findings += _advice(host, prereqs, concurrency)
    return findings


def blocking(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.blocking]


def refusal(findings: list[Finding], scenario: str) -> PrerequisiteError:
    lines = "; ".join(describe(f) for f in blocking(findings))
    return PrerequisiteError(f"unmet prerequisites: {lines}. Apply them with `toolbench prereq apply "
                             f"{scenario}` (root or sudo), or run with --go-on to measure anyway")


def describe(f: Finding) -> str:
    state = {True: "ok", False: "UNMET" if f.required else "warning", None: "n/a"}[f.ok]
    wanted = f" wanted {f.wanted}" if f.wanted is not None else ""
    note = f" - {f.note}" if f.note else ""
    return f"{state}: {f.key}: found {f.found if f.found is not None else 'nothing'}{wanted}{note}"


# sysctl ---------------------------------------------------------------------
def normalize_key(key: str) -> str | None:
    key = key.strip().replace("/", ".")
    return key if _KEY.match(key) else None


def read_sysctl(host: Host, key: str) -> tuple[str | None, str | None]:
    """The value, or None and why not."""
    try:
        captured = host.capture(["cat", "/proc/sys/" + key.replace(".", "/")])
    except HostError as exc:
        return None, str(exc)
    if captured.exit_code == 0:
        return " ".join(captured.stdout.split()), None
    if "No such file" in captured.stderr:
        return None, "no such key on this kernel"
    if "Permission denied" in captured.stderr:
        return None, "not readable without root"
    return None, captured.stderr.strip().splitlines()[-1] if captured.stderr.strip() else "unreadable"


def _check_sysctl(host: Host, raw_key: str, wanted: str, required: bool) -> Finding:
    key = normalize_key(raw_key)
    if key is None:
        return Finding("sysctl", raw_key, wanted, None, False, required, host.label,
                       "not a sysctl key (expected dotted names like net.core.somaxconn)")
    found, why = read_sysctl(host, key)
    if key == TW_RECYCLE and found is None:
        return Finding("sysctl", key, wanted, None, None, False, host.label, TW_RECYCLE_NOTE)
    if found is None:
        return Finding("sysctl", key, wanted, None, False, required, host.label, why or "")
    return Finding("sysctl", key, wanted, found, satisfies(key, found, wanted), required, host.label,
                   _sysctl_note(key, found))


def satisfies(key: str, found: str, wanted: str) -> bool:
    op, value = _operator(key, wanted)
    have, want = _numbers(found), _numbers(value)
    if have is None or want is None or len(have) != len(want):
        return " ".join(found.split()) == " ".join(value.split())
    if key == PORT_RANGE and len(have) == 2:
        return have[0] <= want[0] and have[1] >= want[1]  # the range found covers the one wanted
    if op == ">=":
        return all(h >= w for h, w in zip(have, want))
    if op == "<=":
        return all(h <= w for h, w in zip(have, want))
    return have == want


def target_value(key: str, wanted: str) -> str:
    return _operator(key, wanted)[1]


def _operator(key: str, wanted: str) -> tuple[str, str]:
    match = _OPERATOR.match(wanted)
    if match:
        return match.group(1), match.group(2).strip()
    return (">=" if key in AT_LEAST else "<=" if key in AT_MOST else "=="), wanted.strip()


def _numbers(text: str) -> list[int] | None:
    try:
        return [int(part) for part in text.split()]
    except ValueError:
        return None


def _sysctl_note(key: str, found: str) -> str:
    if key == TW_REUSE and found == "2":
        return "2 reuses TIME_WAIT ports for loopback connections only (the kernel's default)"
    if key == PORT_RANGE:
        return _port_range_note(found)
    return ""


def _port_range_note(found: str, tw_reuse: str | None = None) -> str:
    numbers = _numbers(found)
    if not numbers or len(numbers) != 2:
        return ""
    ports = numbers[1] - numbers[0] + 1
    note = (f"{ports} ephemeral ports: at most {ports} connections to one target address and port at a time, "
            f"TIME_WAIT ones included, so without keep-alive about {ports // TIME_WAIT_S} new connections/s "
            f"can be sustained for long")
    reuse = {"1": "; net.ipv4.tcp_tw_reuse=1 lifts that by reusing TIME_WAIT ports",
             "2": "; net.ipv4.tcp_tw_reuse=2 lifts that for loopback targets only"}
    return note + reuse.get(tw_reuse or "", " unless net.ipv4.tcp_tw_reuse=1 lets TIME_WAIT ports be reused")


# ulimit ---------------------------------------------------------------------
def _check_ulimits(host: Host, prereqs: Prerequisites) -> list[Finding]:
    if not prereqs.ulimit:
        return []
    try:
        login = host.process_limits(raised=False)
        tools = host.with_limits(prereqs.ulimit).process_limits()
    except HostError as exc:
        return [Finding("ulimit", name, str(want), None, False, prereqs.required, host.label, str(exc))
                for name, want in prereqs.ulimit.items()]
    return [_ulimit_finding(host, name, want, login.get(name), tools.get(name), prereqs.required)
            for name, want in prereqs.ulimit.items()]


def _ulimit_finding(host: Host, name: str, want: int, login: Limit | None, tool: Limit | None,
                    required: bool) -> Finding:
    if tool is None:
        return Finding("ulimit", name, str(want), None, False, required, host.label, "limit not found")
    ok = tool.soft is None or tool.soft >= want
    notes = []
    if login is not None and login.soft != tool.soft:
        notes.append(f"toolbench raises it from {_limit(login.soft)} for the processes it starts; "
                     "nothing to undo, it ends with them")
    if not ok:
        notes.append(f"the hard limit is {_limit(tool.hard)}: raising it needs root with CAP_SYS_RESOURCE (a "
                     f"container may withhold it), or `* hard {name} {want}` in /etc/security/limits.conf "
                     "and a new login")
    return Finding("ulimit", name, str(want), _limit(tool.soft), ok, required, host.label, "; ".join(notes))


def _limit(value: int | None) -> str:
    return "unlimited" if value is None else str(value)


# advice ---------------------------------------------------------------------
def _advice(host: Host, prereqs: Prerequisites, concurrency: int) -> list[Finding]:
    found = []
    try:
        nofile = host.with_limits(prereqs.ulimit).process_limits().get("nofile")
    except HostError:
        nofile = None
    if nofile is not None:
        need = concurrency + FD_MARGIN
        ok = nofile.soft is None or nofile.soft >= need
        note = "" if ok else (f"below the concurrency of {concurrency} plus the tool's own files: the tool will "
                              f"fail with \"Too many open files\"; ask for prerequisites.ulimit.nofile")
        found.append(Finding("advice", "ulimit nofile (soft)", f">={need}", _limit(nofile.soft), ok, False,
                             host.label, note))
    somaxconn, _ = read_sysctl(host, "net.core.somaxconn")
    if somaxconn is not None and _numbers(somaxconn):
        ok = int(somaxconn) >= concurrency
        note = "" if ok else ("a listen backlog below the concurrency drops connections: the server's kernel "
                              "discards SYNs beyond it, which the tools see as connect errors or 1 s and 3 s "
                              "retransmission delays")
        found.append(Finding("advice", "net.core.somaxconn", f">={concurrency}", somaxconn, ok, False,
                             host.label, note))
    ports, _ = read_sysctl(host, PORT_RANGE)
    numbers = _numbers(ports) if ports else None
    if numbers and len(numbers) == 2:
        ok = numbers[1] - numbers[0] + 1 >= concurrency
        note = _port_range_note(ports or "", read_sysctl(host, TW_REUSE)[0])
        found.append(Finding("advice", PORT_RANGE, None, ports, ok, False, host.label, note))
    return found


# apply ----------------------------------------------------------------------
def apply(host: Host, prereqs: Prerequisites) -> Applied:
    """Sets what is unmet: sysctls with `sysctl -w` as root or through `sudo -n` (never asking
    for a password). They last until reboot; nothing is written to /etc/sysctl.d."""
    applied = Applied()
    prefix = _privilege(host)
    for raw_key, wanted in prereqs.sysctl.items():
        # The scenario was checked when read; checked again here, where it would be set as root.
        if why := sysctls.key_problem(raw_key) or sysctls.value_problem(str(wanted)):
            applied.problems.append(f"{raw_key}: not set: {why}")
            continue
        finding = _check_sysctl(host, raw_key, wanted, True)
        if finding.ok is not False:
            applied.unchanged.append(describe(finding))
            continue
        if finding.found is None:
            applied.problems.append(f"{finding.key}: cannot set: {finding.note}")
            continue
        if prefix is None:
            applied.problems.append(f"{finding.key}: needs root: run as root, or where `sudo -n` works")
            continue
        _set(host, prefix, finding, target_value(finding.key, wanted), applied)
    for finding in _check_ulimits(host, prereqs):
        if finding.ok:
            applied.unchanged.append(f"ulimit {finding.key}: the tools get {finding.found} (wanted {finding.wanted}) "
                                     "at each run, as toolbench starts them; nothing to change on the host")
        else:
            applied.problems.append(f"ulimit {finding.key}: cannot reach {finding.wanted}: {finding.note}")
    return applied


def _privilege(host: Host) -> list[str] | None:
    try:
        uid = host.capture(["id", "-u"]).stdout.strip()
    except HostError:
        return None
    if uid == "0":
        return []
    return ["sudo", "-n"] if host.which("sudo") else None


def _set(host: Host, prefix: list[str], finding: Finding, value: str, applied: Applied) -> None:
    assignment = f"{finding.key}={value}"
    try:
        captured = host.capture([*prefix, "sysctl", "-w", assignment])
    except HostError as exc:
        applied.problems.append(f"{finding.key}: {exc}")
        return
    if captured.exit_code != 0:
        why = (captured.stderr.strip().splitlines() or [f"exit code {captured.exit_code}"])[-1]
        applied.problems.append(f"{finding.key}: sysctl -w failed: {why}")
        return
    after, _ = read_sysctl(host, finding.key)
    undo = shlex.join([*prefix, "sysctl", "-w", f"{finding.key}={finding.found}"])
    applied.changes.append(Change(finding.key, finding.found, after or value, undo))
