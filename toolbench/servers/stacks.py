"""Starting a target from its spec: each bundled stack a real server on a free loopback
port with its own config in `workdir`, checked ready, stopped with its whole process group."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Mapping

from toolbench.contract.host import free_port
from toolbench.errors import TargetError
from toolbench.hosts.placement import Pin
from toolbench.scenario.targets import GunicornOptions, NginxOptions, SocketOptions, TargetSpec, UwsgiOptions
from toolbench.servers import nginx, python_stacks
from toolbench.servers.process import RunningTarget, launched, limiting, log_tail, placing
from toolbench.servers.ready import wait_until_ready


@contextlib.contextmanager
def start(spec: TargetSpec, workdir: Path, max_concurrency: int = 0, pin: Pin | None = None,
          limits: Mapping[str, int] | None = None) -> Iterator[RunningTarget]:
    """Starts the target, yields it once ready, and stops it with no process left.
    `max_concurrency` is the most connections the scenario will open at once: nginx's
    `worker_connections` is sized for it unless the spec gives one. `pin`: the CPUs (and cpuset)
    of every process it starts; nginx's workers on `auto` are then one per CPU of the pin.
    `limits`: the ulimits its processes get (the scenario's `prerequisites.ulimit`)."""
    with placing(pin), limiting(limits or {}), _start(spec, workdir, max_concurrency, len(pin.cpus) if pin else None) as target:
        yield dataclasses.replace(target, cores=len(pin.cpus)) if pin is not None and target.pids else target


@contextlib.contextmanager
def _start(spec: TargetSpec, workdir: Path, max_concurrency: int, cores: int | None) -> Iterator[RunningTarget]:
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    label = spec.display
    kind = spec.kind
    if kind == "nginx-static":
        stack = nginx.nginx_static(workdir, options=spec.nginx or NginxOptions(), max_concurrency=max_concurrency,
                                   label=label, ready=spec.ready, cores=cores, serve=spec.serve,
                                   access_log=spec.access_log)
    elif kind == "nginx-uwsgi":
        stack = _nginx_uwsgi(spec, workdir, max_concurrency, cores)
    elif kind == "flask-dev":
        stack = python_stacks.flask_dev(workdir, label, spec.ready, spec.app)
    elif kind == "gunicorn":
        stack = python_stacks.gunicorn(workdir, label, spec.ready, spec.gunicorn or GunicornOptions(), spec.app)
    elif kind == "uwsgi":
        stack = python_stacks.uwsgi(workdir, label, spec.ready, spec.uwsgi or UwsgiOptions(), spec.app)
    elif kind in ("socket-threads", "socket-gevent"):
        stack = python_stacks.socket_server(workdir, label, spec.ready, kind.split("-")[1],
                                            spec.socket or SocketOptions())
    elif kind == "command":
        stack = _command(spec, workdir)
    else:
        stack = _url(spec)
    with stack as target:
        yield target


@contextlib.contextmanager
def _nginx_uwsgi(spec: TargetSpec, workdir: Path, max_concurrency: int, cores: int | None) -> Iterator[RunningTarget]:
    # nginx's workers drop to an unprivileged user when started as root: the socket lives in
    # a folder they can enter (the run folder may be private), and uWSGI makes it mode 666.
    folder = Path(tempfile.mkdtemp(prefix="toolbench-uwsgi-"))
    try:
        folder.chmod(0o755)
        options = spec.uwsgi or UwsgiOptions()
        # The uwsgi protocol on a unix socket, or on a loopback TCP port as study 000 ran it.
        where = (python_stacks.HOST, free_port(python_stacks.HOST)) if options.socket == "tcp" \
            else folder / "uwsgi.sock"
        with python_stacks.uwsgi_behind_nginx(workdir / "uwsgi", where, options, spec.ready.timeout_s,
                                              spec.app) as back:
            server, http_extra = nginx.uwsgi_server(where, spec.limit_req)
            log = workdir.resolve() / "nginx" / "access.log" if spec.access_log else None  # a workload's cells
            if log is not None:
                server, http_extra = nginx.access_logged(server, http_extra, log)
            conf = functools.partial(nginx.render, workdir=workdir / "nginx", host=python_stacks.HOST,
                                     options=spec.nginx or NginxOptions(), max_concurrency=max_concurrency,
                                     server=server, http_extra=http_extra, per_client=2, cores_there=cores)
            with nginx.run(workdir / "nginx", spec.display, spec.ready, conf, python_stacks.HOST,
                           spec.serve, log) as (front, _):
                if back.poll() is not None:  # nginx alone answers too (502): the pair is not ready
                    raise TargetError(f"{spec.display}: uwsgi exited with code {back.returncode} before it was "
                                      "ready" + log_tail(workdir / "uwsgi" / "uwsgi.stderr.txt"))
                said = python_stacks.uwsgi_version()
                version = " + ".join(v for v in (front.version, said) if v) or None
                parts = python_stacks.components("nginx-uwsgi", options, said.removeprefix("uWSGI ") if said else None)
                yield dataclasses.replace(front, version=version, pids=(front.pids + (back.pid,)),
                                          logs=front.logs + (str(workdir / "uwsgi" / "uwsgi.stderr.txt"),),
                                          components=front.components + parts)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _command(spec: TargetSpec, workdir: Path) -> Iterator[RunningTarget]:
    assert spec.command is not None and spec.url is not None
    name = spec.name or "target"
    with launched(shlex.split(spec.command), workdir, "target") as proc:
        wait_until_ready(spec.ready, spec.url, name, [(proc, workdir / "target.stderr.txt")])
        yield RunningTarget(base_url=spec.url, label=spec.display, pid=proc.pid, pids=(proc.pid,))


@contextlib.contextmanager
def _url(spec: TargetSpec) -> Iterator[RunningTarget]:
    assert spec.url is not None
    wait_until_ready(spec.ready, spec.url, spec.name or "target")
    yield RunningTarget(base_url=spec.url, label=spec.display)
