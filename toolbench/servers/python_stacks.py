"""The Python stacks of the studies, each run with the interpreter toolbench runs on (the
checkout's .venv): study 000's Flask app under Flask's dev server, gunicorn and uWSGI, and
study 003's socket servers. Configs are JSON, Python with repr()'d values (gunicorn) or an
ini of checked values (uWSGI); request logging is off everywhere, as in nginx-static, so
that every stack is measured serving, not writing a log line per request."""
from __future__ import annotations

import contextlib
import importlib.metadata
import json
import platform
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from toolbench.errors import TargetError
from toolbench.servers.process import RunningTarget, free_port, launched, log_tail
from toolbench.servers.ready import wait_until_ready
from toolbench.servers.spec import GunicornOptions, ReadySpec, SocketOptions, UwsgiOptions

APP = "toolbench.servers.apps.flask_hello:create_app()"  # gunicorn and uWSGI both call a factory so named
HOST = "127.0.0.1"
_INI_SAFE = re.compile(r"^[A-Za-z0-9_./:+=,()-]+$")


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _versions(*names: str) -> str:
    found = [(name, package_version(name)) for name in names]
    first, rest = found[0], found[1:]
    extra = ", ".join(f"{n} {v}" for n, v in rest if v)
    return f"{first[0]} {first[1]}" + (f" ({extra})" if extra else "")


@contextlib.contextmanager
def _served(argv: list[str], workdir: Path, stack: str, label: str, ready: ReadySpec, port: int,
            version: str | None, stop_signal: int = signal.SIGTERM) -> Iterator[RunningTarget]:
    """Runs a one-group stack; its output goes to `<stack>.stdout.txt` and `.stderr.txt`."""
    with launched(argv, workdir, stack, stop_signal=stop_signal) as proc:
        url = f"http://{HOST}:{port}"
        wait_until_ready(ready, url, label, [(proc, workdir / f"{stack}.stderr.txt")])
        yield RunningTarget(base_url=url, label=label, pid=proc.pid, version=version, pids=(proc.pid,))


@contextlib.contextmanager
def flask_dev(workdir: Path, label: str, ready: ReadySpec) -> Iterator[RunningTarget]:
    port = free_port(HOST)
    config = workdir / "flask-dev.json"
    config.write_text(json.dumps({"host": HOST, "port": port}))
    argv = [sys.executable, "-m", "toolbench.servers.apps.flask_dev", str(config)]
    with _served(argv, workdir, "flask-dev", label, ready, port, _versions("Flask", "Werkzeug")) as target:
        yield target


def gunicorn_conf(port: int, options: GunicornOptions) -> str:
    settings = {
        "wsgi_app": APP, "bind": [f"{HOST}:{port}"], "workers": options.workers,
        "worker_class": options.worker_class, "threads": options.threads,
        "worker_connections": options.worker_connections,
        "graceful_timeout": 3,  # on SIGTERM, the longest a worker may finish its requests
        "accesslog": None, "errorlog": "-", "pidfile": None,
        "control_socket_disable": True,  # else every gunicorn shares ~/.gunicorn/gunicorn.ctl
    }
    return "".join(f"{key} = {value!r}\n" for key, value in settings.items())


@contextlib.contextmanager
def gunicorn(workdir: Path, label: str, ready: ReadySpec, options: GunicornOptions) -> Iterator[RunningTarget]:
    port = free_port(HOST)
    config = workdir / "gunicorn.conf.py"
    config.write_text(gunicorn_conf(port, options))
    argv = [sys.executable, "-m", "gunicorn", "-c", str(config)]
    extra = ("gevent",) if options.worker_class == "gevent" else ()
    with _served(argv, workdir, "gunicorn", label, ready, port, _versions("gunicorn", *extra)) as target:
        yield target


def ini_value(value: object) -> str:
    """uWSGI expands `%`, `$(...)` and `@(...)` in its config files and has no quoting:
    a value outside a plain set of characters is refused, never pasted."""
    text = str(value)
    if not _INI_SAFE.match(text):
        raise TargetError(f"uwsgi: cannot put {text!r} into its config (only letters, digits and _./:+=,()-)")
    return text


def uwsgi_ini(listen_on: str, options: UwsgiOptions, unix_socket: bool) -> str:
    settings: list[tuple[str, object]] = [
        ("master", "true"), ("need-app", "true"), ("module", APP), ("processes", options.processes),
        ("listen", options.listen), ("buffer-size", 32768), ("disable-logging", "true"),
    ]
    # Straight from the generator over HTTP, or behind nginx speaking the uwsgi protocol.
    settings += [("socket", listen_on), ("chmod-socket", 666)] if unix_socket else [("http-socket", listen_on)]
    if options.threads > 1:
        settings.append(("threads", options.threads))
    if options.gevent:
        settings += [("gevent", options.gevent), ("gevent-monkey-patch", "true")]
    return "[uwsgi]\n" + "".join(f"{key} = {ini_value(value)}\n" for key, value in settings)


def uwsgi_binary() -> Path:
    found = Path(sys.executable).parent / "uwsgi"
    if not found.exists():
        raise TargetError(f"uwsgi: not installed beside {sys.executable} (scripts/install.sh installs it)")
    return found


def uwsgi_version() -> str | None:
    try:
        out = subprocess.run([str(uwsgi_binary()), "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return f"uWSGI {out.strip()}" if out.strip() else None


def uwsgi_argv(workdir: Path, listen_on: str, options: UwsgiOptions, unix_socket: bool) -> list[str]:
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "uwsgi.ini"
    config.write_text(uwsgi_ini(listen_on, options, unix_socket))
    return [str(uwsgi_binary()), "--ini", str(config)]


# SIGINT: uWSGI's master and workers stop at once (SIGTERM would make it reload).
UWSGI_STOP = signal.SIGINT


@contextlib.contextmanager
def uwsgi(workdir: Path, label: str, ready: ReadySpec, options: UwsgiOptions) -> Iterator[RunningTarget]:
    port = free_port(HOST)
    argv = uwsgi_argv(workdir, f"{HOST}:{port}", options, unix_socket=False)
    with _served(argv, workdir, "uwsgi", label, ready, port, uwsgi_version(), UWSGI_STOP) as target:
        yield target


@contextlib.contextmanager
def uwsgi_on_unix_socket(workdir: Path, path: Path, options: UwsgiOptions,
                         timeout_s: float) -> Iterator[subprocess.Popen[bytes]]:
    """uWSGI behind nginx: started first, ready once its socket accepts a connection."""
    with launched(uwsgi_argv(workdir, str(path), options, unix_socket=True), workdir, "uwsgi",
                  stop_signal=UWSGI_STOP) as proc:
        deadline = time.monotonic() + timeout_s
        while not _unix_accepts(path):
            if proc.poll() is not None:
                raise TargetError(f"uwsgi: exited with code {proc.returncode} before it was ready"
                                  + log_tail(workdir / "uwsgi.stderr.txt"))
            if time.monotonic() >= deadline:
                raise TargetError(f"uwsgi: {path} accepted no connection within ready.timeout = {timeout_s:g}s")
            time.sleep(0.05)
        yield proc


def _unix_accepts(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
            return True
        except OSError:
            return False


@contextlib.contextmanager
def socket_server(workdir: Path, label: str, ready: ReadySpec, mode: str,
                  options: SocketOptions) -> Iterator[RunningTarget]:
    port = free_port(HOST)
    config = workdir / f"socket-{mode}.json"
    config.write_text(json.dumps({"mode": mode, "host": HOST, "port": port, "sleep_s": options.sleep_s,
                                  "backlog": options.backlog}))
    argv = [sys.executable, "-m", "toolbench.servers.apps.socket_server", str(config)]
    python = f"Python {platform.python_version()}"
    version = f"{_versions('gevent')} on {python}" if mode == "gevent" else python
    with _served(argv, workdir, f"socket-{mode}", label, ready, port, version) as target:
        yield target
