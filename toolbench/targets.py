"""Targets under load: the bundled nginx-static, a command that serves a URL,
or a URL that is already running. Started, checked until they answer, stopped."""
from __future__ import annotations

import contextlib
import http.client
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from toolbench.errors import TargetError
from toolbench.lifeline import Lifeline, die_with_parent
from toolbench.scenario import TargetSpec

HELLO = b"Hello, World!"  # the reference study's 13-byte static file

NGINX_CONF = """\
worker_processes {workers};
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
worker_rlimit_nofile 65536;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    default_type application/octet-stream;
    types {{ text/html html; }}
    keepalive_requests 1000000;
    client_body_temp_path {dir}/tmp/body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;
    server {{
        listen {host}:{port} backlog=4096;
        root {www};
        index index.html;
        location = /nope {{ return 404; }}
    }}
}}
"""


@dataclass(frozen=True)
class RunningTarget:
    base_url: str
    label: str
    pid: int | None = None  # the server's main process, when toolbench started it
    version: str | None = None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def started(spec: TargetSpec, workdir: Path, lifeline: Lifeline | None = None) -> Iterator[RunningTarget]:
    """`lifeline`, when given, records the server started and kills it should toolbench die."""
    if spec.server == "nginx-static":
        with nginx_static(workdir / "nginx", lifeline=lifeline) as target:
            yield target
    elif spec.command:
        assert spec.url is not None
        with _command_target(spec, workdir, lifeline) as target:
            yield target
    else:
        assert spec.url is not None
        wait_ready(spec.url + spec.ready_path, spec.ready_timeout_s, None, "target")
        yield RunningTarget(base_url=spec.url, label=spec.display)


@contextlib.contextmanager
def nginx_static(workdir: Path, workers: int = 1, host: str = "127.0.0.1",
                 lifeline: Lifeline | None = None) -> Iterator[RunningTarget]:
    """A real nginx with its own config on a free loopback port."""
    workdir = workdir.resolve()
    binary = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if binary is None:
        raise TargetError("nginx-static: nginx is not installed (apt-get install nginx)")
    (workdir / "tmp").mkdir(parents=True, exist_ok=True)
    # nginx workers drop to an unprivileged user when started as root, and the run
    # folder may sit under a private directory: the files they serve live in a
    # world-readable folder of their own, removed afterwards.
    www = Path(tempfile.mkdtemp(prefix="toolbench-www-"))
    www.chmod(0o755)
    (www / "index.html").write_bytes(HELLO)
    (www / "1k.bin").write_bytes(b"x" * 1024)
    (www / "100k.bin").write_bytes(b"x" * 102400)
    for path in www.iterdir():
        path.chmod(0o644)
    port = free_port(host)
    conf = workdir / "nginx.conf"
    conf.write_text(NGINX_CONF.format(workers=workers, dir=workdir, www=www, host=host, port=port))
    argv = [binary, "-p", str(workdir), "-c", str(conf), "-e", str(workdir / "error.log")]
    version = _nginx_version(binary)
    try:
        with _process(argv, workdir, "nginx", lifeline) as proc:
            url = f"http://{host}:{port}"
            wait_ready(url + "/", 15.0, proc, "nginx-static", workdir / "error.log")
            yield RunningTarget(base_url=url, label="nginx-static", pid=proc.pid, version=version)
    finally:
        shutil.rmtree(www, ignore_errors=True)


@contextlib.contextmanager
def _command_target(spec: TargetSpec, workdir: Path, lifeline: Lifeline | None) -> Iterator[RunningTarget]:
    assert spec.command is not None and spec.url is not None
    workdir.mkdir(parents=True, exist_ok=True)
    with _process(shlex.split(spec.command), workdir, "target", lifeline) as proc:
        wait_ready(spec.url + spec.ready_path, spec.ready_timeout_s, proc, "target",
                   workdir / "target.stderr.txt")
        yield RunningTarget(base_url=spec.url, label=spec.display, pid=proc.pid)


@contextlib.contextmanager
def _process(argv: list[str], workdir: Path, label: str,
             lifeline: Lifeline | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A server in a session of its own (its whole tree is one process group), killed by the
    kernel should toolbench die without stopping it."""
    out = open(workdir / f"{label}.stdout.txt", "wb")
    err = open(workdir / f"{label}.stderr.txt", "wb")
    try:
        proc = subprocess.Popen(argv, cwd=workdir, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=die_with_parent())
    except OSError as exc:
        out.close()
        err.close()
        raise TargetError(f"{label}: cannot start {argv[0]}: {exc.strerror}") from None
    try:
        if lifeline is not None:
            lifeline.adopt(proc.pid, f"target {label}")
        yield proc
    finally:
        _stop(proc)
        if lifeline is not None:
            lifeline.release(proc.pid)
        out.close()
        err.close()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Graceful first (nginx finishes in-flight requests on SIGQUIT), then by force; and
    whatever is left in its group (workers of a master that died first) goes too. The group
    is killed before the leader is reaped: until then its id cannot be reused."""
    for sig, grace in ((signal.SIGQUIT, 3.0), (signal.SIGKILL, 5.0)):
        if _exited(proc):
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        if _exited(proc, grace):
            break
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5.0)


def _exited(proc: subprocess.Popen[bytes], grace: float = 0.0) -> bool:
    """True once the process has exited, within `grace` seconds; it is left unreaped."""
    deadline = time.monotonic() + grace
    while True:
        if proc.returncode is not None or os.waitid(os.P_PID, proc.pid,
                                                    os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def wait_ready(url: str, timeout_s: float, proc: subprocess.Popen[bytes] | None, label: str,
               log: Path | None = None) -> None:
    """Polls until the URL answers any HTTP response."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise TargetError(f"{label}: exited with code {proc.returncode} before it was ready"
                              + _tail(log))
        try:
            http_get(url, timeout_s=1.0)
            return
        except OSError as exc:
            last = str(exc)
        time.sleep(0.05)
    raise TargetError(f"{label}: {url} did not answer within {timeout_s:g}s ({last})" + _tail(log))


def http_get(url: str, timeout_s: float) -> int:
    """One request on a fresh connection; returns the status code."""
    parts = urllib.parse.urlsplit(url)
    conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(parts.hostname or "127.0.0.1", parts.port, timeout=timeout_s)
    try:
        conn.request("GET", parts.path or "/")
        response = conn.getresponse()
        response.read()
        return response.status
    except (http.client.HTTPException, socket.timeout) as exc:
        raise OSError(str(exc) or type(exc).__name__) from None
    finally:
        conn.close()


def _nginx_version(binary: str) -> str | None:
    try:
        out = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=5).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.strip().split("/")[-1] or None


def _tail(log: Path | None) -> str:
    if log is None or not log.exists():
        return ""
    lines = log.read_text(errors="replace").strip().splitlines()
    return f": {lines[-1]}" if lines else ""
