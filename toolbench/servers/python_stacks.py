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
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path, PurePath
from typing import Callable, Iterator

from toolbench.contract.host import free_port
from toolbench.errors import TargetError
from toolbench.scenario.targets import GunicornOptions, ReadySpec, SocketOptions, UwsgiOptions
from toolbench.servers.process import Recipe, RunningTarget, launched_recipe, log_tail
from toolbench.servers.ready import wait_until_ready

APP = "toolbench.servers.apps.flask_hello:create_app()"  # gunicorn and uWSGI both call a factory so named
HOST = "127.0.0.1"
# The app a stack serves, by TargetSpec.app (toolbench.scenario.targets.APPS).
APP_FACTORIES = {"hello": APP, "workload": "toolbench.servers.apps.workload_app:create_app()"}
# The workload app's token key (toolbench.servers.apps.workload_app.SECRET_ENV), not imported: it brings Flask.
WORKLOAD_SECRET_ENV = "TOOLBENCH_WORKLOAD_SECRET"
_INI_SAFE = re.compile(r"^[A-Za-z0-9_./:+=,()-]+$")


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions(*names: str, lookup: Callable[[str], str | None] = package_version) -> str:
    """`gunicorn 23.0.0 (gevent 24.2.1)`: the first package and those of the others found.
    `lookup` finds a package's version (here: this interpreter's; elsewhere: that machine's)."""
    found = [(name, lookup(name)) for name in names]
    first, rest = found[0], found[1:]
    extra = ", ".join(f"{n} {v}" for n, v in rest if v)
    return f"{first[0]} {first[1]}" + (f" ({extra})" if extra else "")


# The packages a stack's version names, by kind; a socket server adds its Python's version.
PACKAGES = {"flask-dev": ("Flask", "Werkzeug"), "gunicorn": ("gunicorn",), "socket-gevent": ("gevent",)}


def stack_version(kind: str, options: GunicornOptions | None, python_version: str,
                  lookup: Callable[[str], str | None] = package_version) -> str | None:
    """The version the manifest records for a one-process Python stack (uWSGI asks its binary)."""
    if kind == "gunicorn":
        extra = ("gevent",) if (options or GunicornOptions()).worker_class == "gevent" else ()
        return versions("gunicorn", *extra, lookup=lookup)
    if kind in ("socket-threads", "socket-gevent"):
        python = f"Python {python_version}"
        return f"{versions('gevent', lookup=lookup)} on {python}" if kind == "socket-gevent" else python
    return versions(*PACKAGES[kind], lookup=lookup) if kind in PACKAGES else None


# The Flask app's packages: every stack but the socket servers runs it.
APP_PACKAGES = ("Flask", "Werkzeug")


def components(kind: str, options: GunicornOptions | UwsgiOptions | None = None,
               uwsgi: str | None = None, python_version: str | None = None,
               lookup: Callable[[str], str | None] = package_version) -> tuple[tuple[str, str], ...]:
    """(name, version) of every component a Python stack of `kind` runs, server first, the
    interpreter last; a package not found is left out. `uwsgi`: what `uwsgi --version` said."""
    names: list[str] = []
    if kind == "gunicorn":
        gevent = isinstance(options, GunicornOptions) and options.worker_class == "gevent"
        names += ["gunicorn", *(["gevent"] if gevent else []), *APP_PACKAGES]
    elif kind in ("uwsgi", "nginx-uwsgi"):
        names += [*(["gevent"] if isinstance(options, UwsgiOptions) and options.gevent else []), *APP_PACKAGES]
    elif kind == "flask-dev":
        names += list(APP_PACKAGES)
    elif kind == "socket-gevent":
        names.append("gevent")
    found = [(name, version) for name in names if (version := lookup(name))]
    if kind in ("uwsgi", "nginx-uwsgi") and uwsgi:
        found.insert(0, ("uWSGI", uwsgi.strip()))
    return tuple(found) + (("Python", python_version or platform.python_version()),)


def app_env(app: str) -> dict[str, str]:
    """The environment `app` needs in every worker process, made anew at each start: the workload
    app's token key (each worker checks the tokens the others made); nothing for the hello app."""
    return {WORKLOAD_SECRET_ENV: secrets.token_hex(32)} if app == "workload" else {}


def flask_dev_recipe(folder: PurePath, python: str, host: str, port: int, app: str = "hello") -> Recipe:
    config: dict[str, object] = {"host": host, "port": port}
    if app != "hello":
        config.update(app=app, env=app_env(app))
    return Recipe("flask-dev", (python, "-m", "toolbench.servers.apps.flask_dev", str(folder / "flask-dev.json")),
                  files={"flask-dev.json": json.dumps(config)})


def gunicorn_conf(port: int, options: GunicornOptions, host: str = HOST, app: str = "hello") -> str:
    settings = {
        "wsgi_app": APP_FACTORIES[app], "bind": [f"{host}:{port}"], "workers": options.workers,
        "worker_class": options.worker_class, "threads": options.threads,
        "worker_connections": options.worker_connections,
        "graceful_timeout": 3,  # on SIGTERM, the longest a worker may finish its requests
        "accesslog": None, "errorlog": "-", "pidfile": None,
        "control_socket_disable": True,  # else every gunicorn shares ~/.gunicorn/gunicorn.ctl
    }
    if env := app_env(app):
        settings["raw_env"] = [f"{key}={value}" for key, value in env.items()]
    return "".join(f"{key} = {value!r}\n" for key, value in settings.items())


def gunicorn_recipe(folder: PurePath, python: str, host: str, port: int, options: GunicornOptions,
                    app: str = "hello") -> Recipe:
    return Recipe("gunicorn", (python, "-m", "gunicorn", "-c", str(folder / "gunicorn.conf.py")),
                  files={"gunicorn.conf.py": gunicorn_conf(port, options, host, app)})


def socket_recipe(folder: PurePath, python: str, host: str, port: int, mode: str, options: SocketOptions) -> Recipe:
    name = f"socket-{mode}"
    config = json.dumps({"mode": mode, "host": host, "port": port, "sleep_s": options.sleep_s,
                         "backlog": options.backlog, "pool": options.pool})
    return Recipe(name, (python, "-m", "toolbench.servers.apps.socket_server", str(folder / f"{name}.json")),
                  files={f"{name}.json": config})


@contextlib.contextmanager
def _served(recipe: Recipe, workdir: Path, label: str, ready: ReadySpec, port: int,
            version: str | None, parts: tuple[tuple[str, str], ...] = ()) -> Iterator[RunningTarget]:
    """Runs a one-group stack; its output goes to `<name>.stdout.txt` and `.stderr.txt`, the
    latter read per cell as its error log (toolbench.servers.target_log)."""
    with launched_recipe(recipe, workdir) as proc:
        url = f"http://{HOST}:{port}"
        stderr = workdir / f"{recipe.name}.stderr.txt"
        wait_until_ready(ready, url, label, [(proc, stderr)])
        yield RunningTarget(base_url=url, label=label, pid=proc.pid, version=version, pids=(proc.pid,),
                            logs=(str(stderr.resolve()),), components=parts)


@contextlib.contextmanager
def flask_dev(workdir: Path, label: str, ready: ReadySpec, app: str = "hello") -> Iterator[RunningTarget]:
    port = free_port(HOST)
    recipe = flask_dev_recipe(workdir, sys.executable, HOST, port, app)
    with _served(recipe, workdir, label, ready, port, stack_version("flask-dev", None, ""),
                 components("flask-dev")) as target:
        yield target


@contextlib.contextmanager
def gunicorn(workdir: Path, label: str, ready: ReadySpec, options: GunicornOptions,
             app: str = "hello") -> Iterator[RunningTarget]:
    port = free_port(HOST)
    recipe = gunicorn_recipe(workdir, sys.executable, HOST, port, options, app)
    with _served(recipe, workdir, label, ready, port, stack_version("gunicorn", options, ""),
                 components("gunicorn", options)) as target:
        yield target


def ini_value(value: object) -> str:
    """uWSGI expands `%`, `$(...)` and `@(...)` in its config files and has no quoting:
    a value outside a plain set of characters is refused, never pasted."""
    text = str(value)
    if not _INI_SAFE.match(text):
        raise TargetError(f"uwsgi: cannot put {text!r} into its config (only letters, digits and _./:+=,()-)")
    return text


def uwsgi_ini(listen_on: str, options: UwsgiOptions, behind_nginx: bool, app: str = "hello") -> str:
    """`listen_on`: HOST:PORT, or behind nginx with `options.socket` "unix" a socket's path."""
    settings: list[tuple[str, object]] = [
        ("master", "true"), ("need-app", "true"), ("module", APP_FACTORIES[app]), ("processes", options.processes),
        ("listen", options.listen), ("buffer-size", 32768), ("disable-logging", "true"),
    ]
    # Straight from the generator over HTTP, or behind nginx speaking the uwsgi protocol (on a
    # unix socket nginx's unprivileged workers must be able to open, or on TCP).
    if not behind_nginx:
        settings.append(("http-socket", listen_on))
    else:
        settings += [("socket", listen_on)] + ([("chmod-socket", 666)] if options.socket == "unix" else [])
    if options.threads > 1:
        settings.append(("threads", options.threads))
    if options.gevent:
        settings += [("gevent", options.gevent), ("gevent-monkey-patch", "true")]
    settings += [("env", f"{key}={value}") for key, value in app_env(app).items()]  # set before the app loads
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
    return uwsgi_version_in(out)


def uwsgi_version_in(answer: str) -> str | None:
    """From what `uwsgi --version` says, here or on another machine."""
    return f"uWSGI {answer.strip()}" if answer.strip() else None


# SIGINT: uWSGI's master and workers stop at once (SIGTERM would make it reload).
UWSGI_STOP = signal.SIGINT


def uwsgi_recipe(folder: PurePath, uwsgi: str, listen_on: str, options: UwsgiOptions, behind_nginx: bool,
                 app: str = "hello") -> Recipe:
    return Recipe("uwsgi", (uwsgi, "--ini", str(folder / "uwsgi.ini")),
                  files={"uwsgi.ini": uwsgi_ini(listen_on, options, behind_nginx, app)}, stop_signal=UWSGI_STOP)


@contextlib.contextmanager
def uwsgi(workdir: Path, label: str, ready: ReadySpec, options: UwsgiOptions,
          app: str = "hello") -> Iterator[RunningTarget]:
    port = free_port(HOST)
    recipe = uwsgi_recipe(workdir, str(uwsgi_binary()), f"{HOST}:{port}", options, behind_nginx=False, app=app)
    said = uwsgi_version()
    with _served(recipe, workdir, label, ready, port, said,
                 components("uwsgi", options, said.removeprefix("uWSGI ") if said else None)) as target:
        yield target


@contextlib.contextmanager
def uwsgi_behind_nginx(workdir: Path, where: Path | tuple[str, int], options: UwsgiOptions,
                       timeout_s: float, app: str = "hello") -> Iterator[subprocess.Popen[bytes]]:
    """uWSGI behind nginx, at a unix socket's path or a TCP (host, port) as `options.socket`
    says: started first, ready once its socket accepts a connection."""
    listen_on = f"{where[0]}:{where[1]}" if isinstance(where, tuple) else str(where)
    with launched_recipe(uwsgi_recipe(workdir, str(uwsgi_binary()), listen_on, options, behind_nginx=True, app=app),
                         workdir) as proc:
        deadline = time.monotonic() + timeout_s
        while not _accepts(where):
            if proc.poll() is not None:
                raise TargetError(f"uwsgi: exited with code {proc.returncode} before it was ready"
                                  + log_tail(workdir / "uwsgi.stderr.txt"))
            if time.monotonic() >= deadline:
                raise TargetError(f"uwsgi: {listen_on} accepted no connection within ready.timeout = {timeout_s:g}s")
            time.sleep(0.05)
        yield proc


def _accepts(where: Path | tuple[str, int]) -> bool:
    family = socket.AF_INET if isinstance(where, tuple) else socket.AF_UNIX
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        try:
            sock.connect(where if isinstance(where, tuple) else str(where))
            return True
        except OSError:
            return False


@contextlib.contextmanager
def socket_server(workdir: Path, label: str, ready: ReadySpec, mode: str,
                  options: SocketOptions) -> Iterator[RunningTarget]:
    port = free_port(HOST)
    recipe = socket_recipe(workdir, sys.executable, HOST, port, mode, options)
    version = stack_version(f"socket-{mode}", None, platform.python_version())
    with _served(recipe, workdir, label, ready, port, version, components(f"socket-{mode}")) as target:
        yield target
