"""Which kernel settings a scenario may ask for (`prerequisites.sysctl`), and what a value may look
like. `prereq apply` and `setup` set them as root, so a scenario from someone else must not reach
beyond what a load test needs: the network stack's queues, buffers, ports and TCP behaviour,
connection tracking, file handles, and the system's thread limit (a thread-per-connection server
needs a thread per connection: study 003). Anything else (`kernel.core_pattern`, which runs a program
as root on the next crash; `kernel.modules_disabled`; `vm.*`) is refused when the scenario is read,
and again where it would be set."""
from __future__ import annotations

import re

# `*` stands for the rest of one name part (letters, digits, `_`), never for a dot. TCP over IPv6
# uses the net.ipv4.tcp_* settings, so there is no net.ipv6 entry.
ALLOWED = (
    "net.core.somaxconn", "net.core.netdev_max_backlog", "net.core.netdev_budget*",
    "net.core.rmem_*", "net.core.wmem_*", "net.core.optmem_max", "net.core.default_qdisc",
    "net.ipv4.tcp_*", "net.ipv4.ip_local_port_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.udp_rmem_min", "net.ipv4.udp_wmem_min",
    "net.netfilter.nf_conntrack_max", "net.netfilter.nf_conntrack_buckets",
    "net.netfilter.nf_conntrack_tcp_timeout_*", "net.nf_conntrack_max",
    "fs.file-max", "fs.nr_open",
    "kernel.threads-max",
)
_ALLOWED = re.compile("|".join(re.escape(p).replace(r"\*", "[A-Za-z0-9_]*") for p in ALLOWED))
# Numbers, or a word such as `bbr` or `fq`, separated by spaces or tabs (tcp_rmem is three numbers,
# ip_local_port_range two): what `sysctl -w` is given as one argument, never through a shell.
# A value may start with `>=` or `<=` (toolbench.hosts.prereq: at least, at most).
_VALUE = re.compile(r"(?:[<>]=[ \t]*)?[A-Za-z0-9_.,-]{1,64}(?:[ \t]+[A-Za-z0-9_.,-]{1,64}){0,7}")


def key_problem(key: str) -> str | None:
    """Why `key` (dotted, or with slashes as under /proc/sys) may not be set, or None."""
    if _ALLOWED.fullmatch(key.strip().replace("/", ".")):
        return None
    return f"not a setting a load test needs (allowed: {', '.join(ALLOWED)})"


def value_problem(value: str) -> str | None:
    """Why `value` is not a plain sysctl value, or None."""
    if _VALUE.fullmatch(value.strip()):
        return None
    return ("expected a plain value (numbers or a word, separated by spaces, at most 8, after an optional "
            f">= or <=), got {value[:80]!r}")
