"""Typed target specs, parsed from one entry of a scenario's `targets:` map (or its
single `target:`): a bundled server stack with its options, a `command` that serves a
`url`, or a `url` already running. Every option is range-checked; an unknown server or
option is an error naming file:line and the key path."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from toolbench.scenario import httpvalues, names
from toolbench.scenario.yamlread import Node

NGINX_KINDS = ("nginx-static",)
FLASK_KINDS = ("flask-dev", "gunicorn", "uwsgi", "nginx-uwsgi")
SOCKET_KINDS = ("socket-threads", "socket-gevent")
BUNDLED = NGINX_KINDS + FLASK_KINDS + SOCKET_KINDS
WORKER_CLASSES = ("sync", "gevent", "gthread")
# The app the Python stacks serve (`app:`): study 000's hello app, or issue 32's workload target
# (toolbench.servers.apps.workload_app: a login, a JSON search, a POST endpoint and a page).
APPS = ("hello", "workload")

_NGINX_KEYS = ("workers", "worker_connections", "keepalive_requests")
_UWSGI_KEYS = ("processes", "threads", "gevent", "listen")
UWSGI_SOCKETS = ("unix", "tcp")  # how nginx reaches uWSGI: a unix socket (the default) or TCP on loopback
OPTION_KEYS: dict[str, tuple[str, ...]] = {
    "nginx-static": _NGINX_KEYS,
    "flask-dev": (),
    "gunicorn": ("worker_class", "workers", "threads", "worker_connections"),
    "uwsgi": _UWSGI_KEYS,
    "nginx-uwsgi": _NGINX_KEYS + _UWSGI_KEYS + ("limit_req", "socket"),
    "socket-threads": ("sleep", "backlog"),
    "socket-gevent": ("sleep", "backlog", "pool"),
}
# Every stack that runs the Flask app may pick which (APPS).
OPTION_KEYS.update({kind: OPTION_KEYS[kind] + ("app",) for kind in FLASK_KINDS})
COMMON_KEYS = ("label", "ready", "restart", "path")
RESTARTS = ("once", "per-cell")
READY_KEYS = ("http", "path", "status", "tcp", "wait", "timeout")

_LABEL = re.compile(r"^[^\x00-\x1f\x7f]{1,80}$")
_PATH = re.compile(r"^/[^\s\x00-\x1f\x7f]*$")
_RATE = re.compile(r"^([1-9][0-9]{0,8})r/([sm])$")
MAX_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class ReadySpec:
    """When a started target counts as ready: it answers HTTP at `path` (with `status`, or
    any status when None), accepts a TCP connection, or has simply run for `wait_s`."""

    mode: str = "http"  # http | tcp | wait
    path: str = "/"
    status: int | None = None
    wait_s: float = 0.0
    timeout_s: float = 15.0


@dataclass(frozen=True)
class NginxOptions:
    workers: int | None = None  # None: one per core
    worker_connections: int | None = None  # None: enough for the scenario's highest concurrency
    keepalive_requests: int = 1_000_000  # high, so that a keep-alive run never reconnects midway


@dataclass(frozen=True)
class LimitReq:
    """nginx's request rate limit per client address, as study 000 put in front of uWSGI."""

    rate: str  # "50r/s" or "600r/m", exactly as nginx spells it
    burst: int = 0
    nodelay: bool = True


@dataclass(frozen=True)
class UwsgiOptions:
    processes: int = 1  # uWSGI's own defaults; study 000's ini had processes 4, threads 2
    threads: int = 1
    gevent: int | None = None  # async cores per process with the gevent loop
    listen: int = 100  # the accept queue, uWSGI's default
    # nginx-uwsgi only: "unix" (a unix socket), or "tcp" (the uwsgi protocol on a loopback port,
    # as study 000's `socket = 0.0.0.0:5000` and `uwsgi_pass 127.0.0.1:5000`).
    socket: str = "unix"


@dataclass(frozen=True)
class GunicornOptions:
    worker_class: str = "sync"
    workers: int = 1
    threads: int = 1
    worker_connections: int = 1000  # gevent and gthread: simultaneous clients per worker


@dataclass(frozen=True)
class SocketOptions:
    """Study 003's raw-socket servers: each connection sleeps `sleep_s`, then gets a reply."""

    sleep_s: float = 0.5
    backlog: int = 500  # the study's listen(500)
    # socket-gevent only: at most this many connections handled at once (gevent.pool.Pool(N), the
    # article's bounded variant); None: a greenlet per connection, unbounded, as the study ran it.
    pool: int | None = None


@dataclass(frozen=True)
class TargetSpec:
    kind: str  # one of BUNDLED, "command" or "url"
    name: str | None = None
    label: str | None = None
    ready: ReadySpec = field(default_factory=ReadySpec)
    nginx: NginxOptions | None = None
    uwsgi: UwsgiOptions | None = None
    gunicorn: GunicornOptions | None = None
    socket: SocketOptions | None = None
    limit_req: LimitReq | None = None
    command: str | None = None
    url: str | None = None
    restart: str = "once"  # "once": one start for its cells (of each repetition, when targets are compared); "per-cell": each
    where: str = ""  # file:line of the entry, for errors found when it starts
    command_at: str = ""  # `file:line: key` of `command`: a program the scenario starts (run --allow-commands)
    # What one start of it must serve: the protocols of the cells it serves (the runner sets it).
    serve: frozenset[str] = frozenset({"http1"})
    # The request path of this target's cells, over the scenario's `request.path` (study 000 loaded
    # hello2's `/hello/libai` on the same servers as hello1's `/`); None: `request.path`.
    path: str | None = None
    app: str = "hello"  # APPS: what a Python stack serves
    # Whether its nginx keeps a log of every request (toolbench.servers.access_log): the runner sets it
    # for the cells of a workload; off otherwise, as writing it costs nginx CPU.
    access_log: bool = False

    @property
    def display(self) -> str:
        return self.label or self.name or (self.url if self.kind == "url" and self.url else self.kind)

    @property
    def bundled(self) -> bool:
        return self.kind in BUNDLED

    @property
    def protocols(self) -> frozenset[str]:
        """What the target serves (toolbench.scenario.read.PROTOCOLS): toolbench's nginx all four
        (its own certificate for TLS); a URL what its scheme says, h2c too in clear, since only a
        try tells; the Python stacks and a command HTTP/1.1 in clear."""
        if self.kind in ("nginx-static", "nginx-uwsgi"):
            return frozenset({"http1", "https", "h2", "h2c"})
        if self.kind == "url" and self.url is not None:
            return frozenset({"https", "h2"} if self.url.startswith("https://") else {"http1", "h2c"})
        return frozenset({"http1"})

    def workers(self, cores: int) -> int | None:
        """How many cores the server can keep busy at once: its worker processes (Python's
        threads share one core each), at most the machine's cores; None when toolbench does
        not know (a command or a URL). nginx's default is one worker per core."""
        nginx = (self.nginx.workers or cores) if self.nginx else 0
        if self.kind in ("flask-dev",) + SOCKET_KINDS:
            processes = 1
        elif self.kind == "gunicorn":
            processes = (self.gunicorn or GunicornOptions()).workers
        elif self.kind in ("uwsgi", "nginx-uwsgi"):
            processes = nginx + (self.uwsgi or UwsgiOptions()).processes
        else:
            processes = nginx
        return min(processes, cores) if processes else None


def parse_target(node: Node, name: str | None = None) -> TargetSpec:
    """One target entry: `{server: KIND, ...options}`, `{command: ..., url: ...}` or `{url: ...}`,
    each with an optional `label` and `ready`."""
    if name is not None and (why := names.problem(name)):
        raise node.error(f"target {why}")
    keys = node.items()
    where = f"{node.file}:{node.line}"
    label = _label(keys["label"]) if "label" in keys else None
    restart = keys["restart"].choice(RESTARTS) if "restart" in keys else "once"
    if "server" in keys:
        kind = keys["server"].choice(BUNDLED)
        keys = node.items(("server",) + COMMON_KEYS + OPTION_KEYS[kind])
        ready = _ready(keys["ready"]) if "ready" in keys else ReadySpec()
        return TargetSpec(kind=kind, name=name, label=label, ready=ready, restart=restart, where=where,
                          path=_request_path(keys), **_options(kind, keys))
    if "url" not in keys:
        raise node.error("expected `server` (one of " + ", ".join(BUNDLED)
                         + "), or `url` with an optional `command` that serves it")
    keys = node.items(("command", "url") + COMMON_KEYS)
    ready = _ready(keys["ready"]) if "ready" in keys else ReadySpec()
    command = keys["command"].string() if "command" in keys else None
    at = f"{keys['command'].file}:{keys['command'].line}: {keys['command'].path}" if command else ""
    return TargetSpec(kind="command" if command else "url", name=name, label=label, ready=ready,
                      restart=restart, command=command, url=_url(keys["url"]), where=where, command_at=at,
                      path=_request_path(keys))


def _options(kind: str, keys: dict[str, Node]) -> dict[str, object]:
    if kind in SOCKET_KINDS:
        sleep = keys["sleep"].duration_s() if "sleep" in keys else SocketOptions.sleep_s
        if sleep > 60:
            raise keys["sleep"].error(f"expected at most 60s, got {sleep:g}s")
        return {"socket": SocketOptions(sleep_s=sleep, backlog=_int(keys, "backlog", 500, 65535),
                                        pool=_optional_int(keys, "pool", 100_000))}
    found: dict[str, object] = {}
    if kind in ("nginx-static", "nginx-uwsgi"):
        found["nginx"] = NginxOptions(workers=_optional_int(keys, "workers", 1024),
                                      worker_connections=_optional_int(keys, "worker_connections", 1 << 20),
                                      keepalive_requests=_int(keys, "keepalive_requests", 1_000_000, 10**9))
    if kind in ("uwsgi", "nginx-uwsgi"):
        found["uwsgi"] = UwsgiOptions(processes=_int(keys, "processes", 1, 1024), threads=_int(keys, "threads", 1, 1024),
                                      gevent=_optional_int(keys, "gevent", 100_000), listen=_int(keys, "listen", 100, 65535),
                                      socket=keys["socket"].choice(UWSGI_SOCKETS) if "socket" in keys else "unix")
        if "gevent" in keys and "threads" in keys:
            raise keys["threads"].error("uWSGI runs either `threads` or `gevent` cores per process, not both")
    if kind == "gunicorn":
        found["gunicorn"] = _gunicorn(keys)
    if "limit_req" in keys:
        found["limit_req"] = _limit_req(keys["limit_req"])
    if "app" in keys:
        found["app"] = keys["app"].choice(APPS)
    return found


def _gunicorn(keys: dict[str, Node]) -> GunicornOptions:
    worker_class = keys["worker_class"].choice(WORKER_CLASSES) if "worker_class" in keys else "sync"
    threads = _int(keys, "threads", 1, 1024)
    # gunicorn would quietly run gthread for sync with threads > 1, and ignore threads for gevent.
    if threads > 1 and worker_class != "gthread":
        raise keys["threads"].error(f"threads > 1 needs worker_class: gthread (got worker_class {worker_class})")
    if "worker_connections" in keys and worker_class == "sync":
        raise keys["worker_connections"].error("a sync worker serves one client at a time: "
                                               "worker_connections needs worker_class gevent or gthread")
    return GunicornOptions(worker_class=worker_class, workers=_int(keys, "workers", 1, 1024), threads=threads,
                           worker_connections=_int(keys, "worker_connections", 1000, 1 << 20))


def _limit_req(node: Node) -> LimitReq:
    keys = node.items(("rate", "burst", "nodelay"))
    if "rate" not in keys:
        raise node.error("missing required key 'rate' (e.g. 50r/s)")
    rate = str(keys["rate"].scalar())
    if not _RATE.match(rate):
        raise keys["rate"].error(f"expected a rate like 50r/s or 600r/m, got {rate!r}")
    burst = 0
    if "burst" in keys:
        value = keys["burst"].scalar()
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**9:
            raise keys["burst"].error(f"expected an integer from 0 to 1000000000, got {value!r}")
        burst = value
    nodelay = keys["nodelay"].boolean() if "nodelay" in keys else True
    return LimitReq(rate=rate, burst=burst, nodelay=nodelay)


def _ready(node: Node) -> ReadySpec:
    keys = node.items(READY_KEYS)
    modes = [k for k in ("http", "path", "tcp", "wait") if k in keys]
    if len(modes) > 1:
        raise keys[modes[1]].error(f"give one of http, tcp or wait, not {' and '.join(modes)}")
    mode = {"path": "http"}.get(modes[0], modes[0]) if modes else "http"  # `path` is the older spelling
    if "status" in keys and mode != "http":
        raise keys["status"].error(f"`status` goes with `http`, not with `{mode}`")
    if "timeout" in keys and mode == "wait":
        raise keys["timeout"].error("`wait` has no timeout: it waits that long, then checks the server still runs")
    ready = ReadySpec()
    if "timeout" in keys:
        timeout = keys["timeout"].duration_s()
        if not 0 < timeout <= MAX_TIMEOUT_S:
            raise keys["timeout"].error(f"expected a duration above 0 and at most 1h, got {timeout:g}s")
        ready = ReadySpec(timeout_s=timeout)
    if mode == "tcp":
        if not keys["tcp"].boolean():
            raise keys["tcp"].error("expected `tcp: true`; leave `ready` out for the default HTTP check")
        return ReadySpec(mode="tcp", timeout_s=ready.timeout_s)
    if mode == "wait":
        wait = keys["wait"].duration_s()
        if wait > MAX_TIMEOUT_S:
            raise keys["wait"].error(f"expected at most 1h, got {wait:g}s")
        return ReadySpec(mode="wait", wait_s=wait)
    path = keys[modes[0]].string() if modes else "/"
    if not _PATH.match(path):
        raise keys[modes[0]].error(f"expected a path starting with '/', without spaces, got {path!r}")
    return ReadySpec(path=path, status=_status(keys["status"]) if "status" in keys else None,
                     timeout_s=ready.timeout_s)


def _status(node: Node) -> int | None:
    value = node.scalar()
    if value == "any":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 599:
        raise node.error(f"expected `any` or an HTTP status from 100 to 599, got {value!r}")
    return value


def _request_path(keys: dict[str, Node]) -> str | None:
    """A target's own request path, checked as `request.path` is (toolbench.scenario.httpvalues)."""
    if "path" not in keys:
        return None
    try:
        return httpvalues.request_path(keys["path"].string())
    except httpvalues.ValueProblem as exc:
        raise keys["path"].error(str(exc)) from None


def _url(node: Node) -> str:
    try:
        return httpvalues.base_url(node.string())
    except httpvalues.ValueProblem as exc:
        raise node.error(str(exc)) from None


def _label(node: Node) -> str:
    label = node.string()
    if not _LABEL.match(label):
        raise node.error("expected a label of 1 to 80 printable characters")
    return label


def _int(keys: dict[str, Node], key: str, default: int, most: int) -> int:
    value = _optional_int(keys, key, most)
    return default if value is None else value


def _optional_int(keys: dict[str, Node], key: str, most: int) -> int | None:
    if key not in keys:
        return None
    value = keys[key].positive_int()
    if value > most:
        raise keys[key].error(f"expected at most {most}, got {value}")
    return value

