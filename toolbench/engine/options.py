"""What one engine run is asked to do, checked once, and the request bytes it sends."""
from __future__ import annotations

import os
import re
import socket
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolbench.errors import ToolbenchError

if TYPE_CHECKING:
    from toolbench.engine.workload import WorkloadSpec

USER_AGENT = "toolbench-engine"
DEFAULT_TIMEOUT_S = 10.0
# The keep-alive C core's coalesced reads in the closed model run by time (_churn_keepalive.c):
# how far past the oldest request in flight the one whose response it waits for may be. Off by
# default: a connection then pauses between its response and its next request (238 µs on average
# with 200us against nginx here, the result's note says it), which costs nothing against a
# saturated server (there it took a third off the engine's CPU per request and raised nginx's
# rate: bench/README.md) but lowers the closed loop's rate against one that is not, by the pause
# over the latency; the default reads each response as it comes, as wrk does.
DEFAULT_COALESCE_S = 0.0


class EngineError(ToolbenchError):
    """The engine cannot run as asked: bad options, an unusable URL, a failed worker."""


@dataclass(frozen=True)
class Target:
    host: str  # as written in the URL, for the Host header
    address: str  # resolved once, so no connection pays for a DNS lookup
    port: int
    path: str  # path and query, as sent on the request line
    tls: bool = False  # https: HTTP/1.1 over TLS
    hostname: str = ""  # the host without its port: the name the server's certificate must carry


@dataclass(frozen=True)
class EngineOptions:
    url: str
    connections: int
    duration_s: float | None = None
    requests: int | None = None
    workers: int | None = None  # None: one per CPU this process may run on
    rate_rps: float | None = None  # None: closed model
    keepalive: bool = True
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_timeout_s: float | None = None  # None: the request timeout
    warmup_s: float = 0.0
    scenario: str = "engine"
    cacert: str | None = None  # https: PEM file of the CA(s) to trust; None: the system's store
    tls_resume: bool = True  # https: a new connection resumes its slot's (or worker's) last session
    coalesce_s: float = DEFAULT_COALESCE_S  # the C keep-alive core's longest wait between reads; 0: none
    extra: dict[str, str] = field(default_factory=dict)
    # Several named requests (--workload, engine/workload.py), run on the Python path; None: the one request.
    workload: "WorkloadSpec | None" = None

    @property
    def open_model(self) -> bool:
        return self.rate_rps is not None

    @property
    def connect_timeout(self) -> float:
        return self.connect_timeout_s if self.connect_timeout_s is not None else self.timeout_s

    def worker_count(self) -> int:
        wanted = self.workers if self.workers is not None else len(os.sched_getaffinity(0))
        return max(1, min(wanted, self.connections))


def validate(opts: EngineOptions) -> None:
    """Raises EngineError naming the first option that cannot work."""
    if opts.connections < 1:
        raise EngineError(f"connections must be at least 1, got {opts.connections}")
    if (opts.duration_s is None) == (opts.requests is None):
        raise EngineError("give exactly one of a duration (-d) or a request count (-n)")
    if opts.duration_s is not None and opts.duration_s <= 0:
        raise EngineError(f"duration must be positive, got {opts.duration_s:g}s")
    if opts.requests is not None and opts.requests < 1:
        raise EngineError(f"request count must be at least 1, got {opts.requests}")
    if opts.workers is not None and opts.workers < 1:
        raise EngineError(f"workers must be at least 1, got {opts.workers}")
    if opts.rate_rps is not None and not opts.rate_rps > 0:
        raise EngineError(f"rate must be positive, got {opts.rate_rps:g}")
    if not opts.timeout_s > 0:
        raise EngineError(f"timeout must be positive, got {opts.timeout_s:g}s")
    if opts.warmup_s < 0:
        raise EngineError(f"warm-up cannot be negative, got {opts.warmup_s:g}s")
    if not 0 <= opts.coalesce_s <= 0.01:
        raise EngineError(f"--coalesce must be between 0 and 10ms, got {opts.coalesce_s:g}s")
    if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", opts.method):
        raise EngineError(f"not an HTTP method: {opts.method!r}")
    if opts.workload is not None and opts.workload.stages:
        if opts.warmup_s > 0:
            raise EngineError("--warmup with a workload's stages: the stages are the load from the start")
        if opts.workload.open_stages != opts.open_model:
            raise EngineError("a workload's stages in users are a closed model (no --rate); in rate_rps, an open one")
    for name, value in opts.headers:
        if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name) or "\r" in value or "\n" in value:
            raise EngineError(f"not a valid header: {name!r}: {value!r}")


def parse_url(url: str) -> Target:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EngineError(f"{url}: expected a URL like http://host:port/path or https://host:port/path")
    tls = parts.scheme == "https"
    try:
        port = parts.port or (443 if tls else 80)
    except ValueError:
        raise EngineError(f"{url}: bad port") from None
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise EngineError(f"{url}: cannot resolve {parts.hostname}: {exc.strerror}") from None
    address = str(infos[0][4][0])
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    host = parts.netloc.rsplit("@", 1)[-1]
    return Target(host=host, address=address, port=port, path=path, tls=tls, hostname=parts.hostname)


def request_bytes(opts: EngineOptions, target: Target) -> bytes:
    """The whole request, formatted once: every send writes the same bytes."""
    given = {name.lower() for name, _ in opts.headers}
    lines = [f"{opts.method} {target.path} HTTP/1.1"]
    defaults = (("Host", target.host), ("User-Agent", USER_AGENT), ("Accept", "*/*"))
    lines += [f"{name}: {value}" for name, value in defaults if name.lower() not in given]
    lines += [f"{name}: {value}" for name, value in opts.headers
              if name.lower() not in ("content-length", "connection")]
    if opts.body or opts.method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(opts.body)}")
    if not opts.keepalive:
        lines.append("Connection: close")
    head = "\r\n".join(lines) + "\r\n\r\n"
    return head.encode("latin-1") + opts.body


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|ms|s|m|h)?\s*$")
_UNITS = {"us": 1e-6, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str) -> float:
    """`10`, `10s`, `500ms`, `200us`, `2m`, `1h` -> seconds."""
    match = _DURATION.match(text)
    if not match:
        raise EngineError(f"not a duration: {text!r} (e.g. 10s, 500ms, 2m)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise EngineError(f"not a header: {text!r} (expected 'Name: value')")
    return name.strip(), value.strip()


def split(total: int, parts: int) -> list[int]:
    """`total` spread over `parts` as evenly as integers allow, larger shares first."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]
