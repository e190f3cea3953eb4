"""nginx, as the static-file server of the reference study (`nginx-static`) and as the
front of uWSGI over a unix socket or TCP (study 000's `nginx-uwsgi`). Each gets a config of its own
in its work folder; every path and value in it goes through `quote`."""
from __future__ import annotations

import contextlib
import functools
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Callable, Iterator

from toolbench.contract.host import free_port
from toolbench.errors import TargetError
from toolbench.scenario.targets import LimitReq, NginxOptions, ReadySpec
from toolbench.servers import tls as certificate
from toolbench.servers.process import Recipe, RunningTarget, launched_recipe
from toolbench.servers.ready import wait_until_ready

HELLO = b"Hello, World!"  # the reference study's 13-byte static file
MIN_WORKER_CONNECTIONS = 1024
MIN_NOFILE = 65536
LEGACY_WORKER_CONNECTIONS = 16384

CONF = """\
worker_processes {workers};
daemon off;
pid {pid};
error_log {error_log} warn;
worker_rlimit_nofile {nofile};
events {{ worker_connections {worker_connections}; }}
http {{
    access_log off;
    default_type application/octet-stream;
    types {{ text/html html; }}
    keepalive_requests {keepalive_requests};
{temp_paths}{http_extra}    server {{
        listen {host}:{port} backlog=4096;
{server}    }}
{more_servers}}}
"""

# The same site over TLS (HTTP/2 or HTTP/1.1, as ALPN settles) and in clear over HTTP/2 with
# prior knowledge. Sessions resume by cache and by ticket, as a production nginx would; the
# first request of each TLS connection is logged (`$connection_requests` 1), with whether its
# handshake resumed a session: the cell's handshakes, full and resumed (toolbench.servers.tls_log).
TLS_SERVERS = """    map $connection_requests $toolbench_first {{ 1 1; default 0; }}
    log_format toolbench_tls '$connection $ssl_session_reused $ssl_protocol $ssl_cipher $server_protocol';
    server {{
        listen {host}:{tls_port} ssl http2 backlog=4096;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:toolbench:10m;
        ssl_session_tickets on;
        access_log {log} toolbench_tls if=$toolbench_first;
{server}    }}
    server {{
        listen {host}:{h2c_port} http2 backlog=4096;
{server}    }}
"""


@dataclass(frozen=True)
class TlsListen:
    """Where nginx serves TLS (and h2 by ALPN) and h2c, and with what certificate."""

    tls_port: int
    h2c_port: int
    cert: PurePath
    key: PurePath
    log: PurePath  # one line per TLS connection: the handshakes

    def urls(self, host: str) -> dict[str, str]:
        return {"https": f"https://{host}:{self.tls_port}", "h2": f"https://{host}:{self.tls_port}",
                "h2c": f"http://{host}:{self.h2c_port}"}

# A log of every request, for a workload's cells only (TargetSpec.access_log; read per cell by
# toolbench.servers.access_log): writing it costs nginx CPU, so no other cell pays for it. With
# escape=json a value's `"`, `\` and control characters (a tab, a newline) are escaped: whatever a
# client sends, a line stays one line of seven tab-separated fields. Every server of the config (the
# TLS and h2c ones too) writes it; the handshakes log beside it is unchanged.
ACCESS_LOG_FORMAT = ("    log_format toolbench_requests escape=json '$msec\\t$request_method\\t$request_uri\\t"
                     "$status\\t$bytes_sent\\t$connection_requests\\t$http_user_agent';\n")


def access_logged(server: str, http_extra: str, log: PurePath) -> tuple[str, str]:
    """A `server` body and `http` extra lines (as uwsgi_server gives them) that log every request to `log`."""
    return f"        access_log {quote(str(log))} toolbench_requests;\n" + server, http_extra + ACCESS_LOG_FORMAT


STATIC_SERVER = """\
        root {www};
        index index.html;
        location = /nope {{ return 404; }}
"""

# Debian's /etc/nginx/uwsgi_params, written out so that the config stands alone.
UWSGI_PARAMS = ("QUERY_STRING $query_string", "REQUEST_METHOD $request_method", "CONTENT_TYPE $content_type",
                "CONTENT_LENGTH $content_length", "REQUEST_URI $request_uri", "PATH_INFO $document_uri",
                "DOCUMENT_ROOT $document_root", "SERVER_PROTOCOL $server_protocol", "REQUEST_SCHEME $scheme",
                "REMOTE_ADDR $remote_addr", "REMOTE_PORT $remote_port", "SERVER_PORT $server_port",
                "SERVER_NAME $server_name", "HTTP_HOST $host")

_UNQUOTABLE = re.compile(r"[\x00-\x1f\x7f$]")


def quote(value: str) -> str:
    """An nginx string. `$` would start a variable in the directives that take them, and
    nginx has no escape for it: such a value is refused, never pasted."""
    if _UNQUOTABLE.search(value):
        raise TargetError(f"nginx: cannot put {value!r} into its config ('$' or a control character)")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if found is None:
        raise TargetError("nginx: not installed (apt-get install nginx)")
    return found


def version(nginx: str) -> str | None:
    try:
        return version_in(subprocess.run([nginx, "-v"], capture_output=True, text=True, timeout=5).stderr)
    except (OSError, subprocess.TimeoutExpired):
        return None


def version_in(answer: str) -> str | None:
    """From what `nginx -v` says (on stderr), here or on another machine."""
    found = re.search(r"nginx/(\S+)", answer)
    return f"nginx {found.group(1)}" if found else None


def cores() -> int:
    return len(os.sched_getaffinity(0))


def render(port: int, *, workdir: PurePath, host: str, options: NginxOptions, max_concurrency: int, server: str,
           http_extra: str = "", per_client: int = 1, cores_there: int | None = None,
           tls: TlsListen | None = None) -> str:
    """The whole config. `per_client` is how many connections a worker holds per client:
    two in front of uWSGI (the client's and the one to uWSGI). `workdir` and `cores_there`
    are those of the machine nginx runs on (this one's by default)."""
    try:
        ipaddress.IPv4Address(host)  # a literal address, never a name pasted into `listen`
    except ValueError:
        raise TargetError(f"nginx: listens on an IPv4 address, not {host!r}") from None
    wanted = max_concurrency * per_client + 64  # readiness checks and the probe beside the load
    worker_connections = options.worker_connections or max(MIN_WORKER_CONNECTIONS, wanted)
    temp_paths = "".join(f"    {kind}_temp_path {quote(str(workdir / 'tmp' / kind))};\n"
                         for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return CONF.format(workers=options.workers or cores_there or cores(), pid=quote(str(workdir / "nginx.pid")),
                       error_log=quote(str(workdir / "error.log")),
                       nofile=max(MIN_NOFILE, 2 * worker_connections + 64), worker_connections=worker_connections,
                       keepalive_requests=options.keepalive_requests, temp_paths=temp_paths,
                       host=host, port=port, http_extra=http_extra, server=server,
                       more_servers=_tls_servers(tls, host, server))


def _tls_servers(tls: TlsListen | None, host: str, server: str) -> str:
    if tls is None:
        return ""
    return TLS_SERVERS.format(host=host, tls_port=tls.tls_port, h2c_port=tls.h2c_port, cert=quote(str(tls.cert)),
                              key=quote(str(tls.key)), log=quote(str(tls.log)), server=server)


def static_server(www: PurePath) -> str:
    return STATIC_SERVER.format(www=quote(str(www)))


def uwsgi_server(socket_path: PurePath | tuple[str, int], limit_req: LimitReq | None) -> tuple[str, str]:
    """The `server` block's body and the `http` block's extra lines for nginx in front of uWSGI,
    reached at a unix socket's path or at a TCP (IPv4 address, port)."""
    lines = []
    http_extra = ""
    if limit_req is not None:
        # Study 000's limit, per client address: `rate=50r/s` and `burst=20 nodelay`.
        http_extra = f"    limit_req_zone $binary_remote_addr zone=perclient:10m rate={limit_req.rate};\n"
        burst = f" burst={limit_req.burst}" if limit_req.burst else ""  # nginx refuses burst=0: it is the default
        lines.append(f"limit_req zone=perclient{burst}{' nodelay' if limit_req.nodelay else ''};")
    lines += ["location / {"]
    lines += [f"    uwsgi_param {param};" for param in UWSGI_PARAMS]
    lines += [f"    uwsgi_pass {_uwsgi_upstream(socket_path)};", "    uwsgi_read_timeout 100;", "}"]
    return "".join(f"        {line}\n" for line in lines), http_extra


def _uwsgi_upstream(where: PurePath | tuple[str, int]) -> str:
    if not isinstance(where, tuple):
        return quote("unix:" + str(where))
    host, port = where
    try:
        address = ipaddress.IPv4Address(host)  # a literal address and a port number, never text pasted
    except ValueError:
        raise TargetError(f"nginx: reaches uWSGI at an IPv4 address, not {host!r}") from None
    if not 0 < int(port) < 65536:
        raise TargetError(f"nginx: not a port: {port!r}")
    return quote(f"{address}:{int(port)}")


def recipe(nginx: str, folder: PurePath, conf: str) -> Recipe:
    """nginx with `conf` in `folder`; SIGQUIT stops it: it finishes the requests in flight, then exits."""
    return Recipe("nginx", (nginx, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-e", str(folder / "error.log")),
                  files={"nginx.conf": conf}, folders=("tmp",), stop_signal=signal.SIGQUIT)


@contextlib.contextmanager
def run(workdir: Path, label: str, ready: ReadySpec, conf_for_port: Callable[..., str],
        host: str = "127.0.0.1", serve: frozenset[str] = frozenset({"http1"}), access_log: Path | None = None
        ) -> Iterator[tuple[RunningTarget, subprocess.Popen[bytes]]]:
    """Writes the config for a free port, starts nginx and waits until it is ready. With
    `serve` naming a protocol beyond plain HTTP/1.1, also on TLS (a certificate made now, in
    `workdir`/tls) and h2c ports, called with `tls=`; a plain target's config is as it was."""
    workdir = workdir.resolve()
    nginx = binary()
    port = free_port(host)
    tls = None
    if serve - {"http1"}:
        made = certificate.make(workdir, host)
        tls = TlsListen(free_port(host), free_port(host), made.cert, made.key, workdir / "tls" / "handshakes.log")
    conf = conf_for_port(port, tls=tls) if tls is not None else conf_for_port(port)
    with launched_recipe(recipe(nginx, workdir, conf), workdir) as proc:
        url = f"http://{host}:{port}"
        wait_until_ready(ready, url, label, [(proc, workdir / "error.log")])
        said = version(nginx)
        yield RunningTarget(base_url=url, label=label, pid=proc.pid, version=said, pids=(proc.pid,),
                            urls=tls.urls(host) if tls else {}, ca_file=str(tls.cert) if tls else None,
                            handshake_log=str(tls.log) if tls else None, logs=(str(workdir / "error.log"),),
                            components=(("nginx", said.removeprefix("nginx ")),) if said else (),
                            access_log=str(access_log) if access_log else None), proc


# The files nginx-static serves.
STATIC_FILES = {"index.html": HELLO, "1k.bin": b"x" * 1024, "100k.bin": b"x" * 102400}


@contextlib.contextmanager
def static_files() -> Iterator[Path]:
    """The files nginx-static serves. nginx's workers drop to an unprivileged user when started
    as root, and a run folder may sit under a private directory: they live in a world-readable
    folder of their own, removed afterwards."""
    www = Path(tempfile.mkdtemp(prefix="toolbench-www-"))
    try:
        www.chmod(0o755)
        for name, content in STATIC_FILES.items():
            (www / name).write_bytes(content)
        for path in www.iterdir():
            path.chmod(0o644)
        yield www
    finally:
        shutil.rmtree(www, ignore_errors=True)


@contextlib.contextmanager
def nginx_static(workdir: Path, workers: int = 1, host: str = "127.0.0.1", *, options: NginxOptions | None = None,
                 max_concurrency: int = 0, label: str = "nginx-static", ready: ReadySpec = ReadySpec(),
                 cores: int | None = None, serve: frozenset[str] = frozenset({"http1"}),
                 access_log: bool = False) -> Iterator[RunningTarget]:
    """A real nginx with its own config on a free loopback port: / is "Hello, World!",
    /1k.bin, /100k.bin, and /nope answers 404; also over TLS and h2c when `serve` asks. `cores`: the CPUs it was given (one worker each
    on `auto`); None: this process's."""
    # Without options, what nginx_static has always run: `workers` and room for 16384 connections.
    options = options or NginxOptions(workers=workers, worker_connections=LEGACY_WORKER_CONNECTIONS)
    log = workdir.resolve() / "access.log" if access_log else None  # a log of every request: access_logged
    with static_files() as www:
        server, http_extra = access_logged(static_server(www), "", log) if log else (static_server(www), "")
        conf = functools.partial(render, workdir=workdir.resolve(), host=host, options=options, http_extra=http_extra,
                                 max_concurrency=max_concurrency, server=server, cores_there=cores)
        with run(workdir, label, ready, conf, host, serve, log) as (target, _):
            yield target
