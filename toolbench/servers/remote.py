"""A bundled stack on another machine (`hosts.target`), over SSH. Its processes are the same
recipes as on this machine (toolbench.servers.nginx, .python_stacks), written for the paths
and address there; their files are copied into a workspace there (a copy stays in the run
folder), each process is started there in a process group of its own with its output in
files there, checked ready from this machine, stopped by its stop signal to the group and
SIGKILL after a grace, checked gone, and its logs fetched. While a cell runs, its process
groups are sampled there by toolbench.servers.sampler (the local server monitor, run there)."""
from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import itertools
import json
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator, Mapping, Sequence

from toolbench.contract.host import Host
from toolbench.errors import HostError, TargetError, ToolbenchError
from toolbench.hosts.ssh import SSHHost
from toolbench.hosts.ssh_process import RemoteProcess
from toolbench.scenario.targets import GunicornOptions, NginxOptions, SocketOptions, TargetSpec, UwsgiOptions
from toolbench.servers import cost, nginx
from toolbench.servers import python_stacks as py
from toolbench.servers.process import Recipe, RunningTarget, log_tail
from toolbench.servers.ready import wait_until_ready

GRACE_S = 3.0  # after the stop signal, before SIGKILL
KILL_WAIT_S = 5.0
SAMPLER_START_S = 30.0
_FREE_PORT = "import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])"
_VERSIONS = ("import importlib.metadata as m, json, platform, sys\n"
             "def version(name):\n"
             "    try:\n        return m.version(name)\n"
             "    except m.PackageNotFoundError:\n        return None\n"
             "print(json.dumps({'python': platform.python_version(), **{n: version(n) for n in sys.argv[1:]}}))")
_UNIX_ACCEPTS = "import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])"
_PACKAGES = ("Flask", "Werkzeug", "gunicorn", "gevent")
# The live processes (zombies aside) of group $1, read from /proc as process.group_members does.
_MEMBERS = ('pg=$1; for f in /proc/[0-9]*/stat; do read -r line < "$f" 2>/dev/null || continue; set -f; '
            'set -- ${line##*") "}; set +f; [ "$1" != Z ] && [ "$3" = "$pg" ] && { p=${f#/proc/}; '
            'echo "${p%/stat}"; }; done; true')
_SIGNAL = 'kill -"$1" "-$2" 2>/dev/null; true'  # no `--`: dash's kill takes it for a pid
_OUTPUT = 'exec "$@" >"$0.stdout.txt" 2>"$0.stderr.txt"'  # a server's log there, never streamed over SSH


@dataclass(frozen=True)
class Machine:
    """The target host as a stack needs it: its Python, its cores, where its servers listen
    and where this machine reaches them."""

    host: SSHHost
    python: str
    cores: int
    listen: str
    reach: str
    tools: Mapping[str, str]
    places: Mapping[str, str]  # `hosts.target.tools.<program>` -> file:line in the scenario
    found: dict[str, str] = dataclasses.field(default_factory=dict)  # programs looked up so far

    def program(self, name: str) -> str:
        """nginx or uwsgi there: at `hosts.target.tools.<name>`, else nginx on the PATH (or in
        /usr/sbin) and uwsgi beside its Python, as here."""
        if name in self.found:
            return self.found[name]
        given = self.tools.get(name)
        default = {"nginx": "nginx", "uwsgi": str(PurePosixPath(self.python).parent / "uwsgi")}[name]
        for candidate in [given] if given else [default, *(["/usr/sbin/nginx"] if name == "nginx" else [])]:
            path = self.host.which(candidate)
            if path is not None:
                self.found[name] = path
                return path
        if given:
            key = f"hosts.target.tools.{name}"
            raise TargetError(f"{self.places.get(key, 'the scenario')}: {key}: {given} not found on {self.host.label}")
        raise TargetError(f"{self.host.label}: {name} not found (tried {default}; give hosts.target.tools.{name})")

    def run(self, argv: list[str], what: str) -> str:
        captured = self.host.capture(argv, timeout_s=30.0)
        if captured.exit_code != 0:
            said = (captured.stderr.strip().splitlines() or [f"exit code {captured.exit_code}"])[-1]
            raise TargetError(f"{self.host.label}: cannot {what}: {said}")
        return captured.stdout

    def free_port(self) -> int:
        answer = self.run([self.python, "-c", _FREE_PORT, self.listen], "find a free port").strip()
        if not answer.isdigit() or not 0 < int(answer) < 65536:
            raise TargetError(f"{self.host.label}: no free port: {answer[:80]!r}")
        return int(answer)


def machine(host: SSHHost, address: str, tools: Mapping[str, str], places: Mapping[str, str]) -> Machine:
    """Its Python: `hosts.target.tools.python`, else the interpreter toolbench runs on if that
    machine has it at the same path, else python3. Its servers listen on the loopback address
    the scenario names, else on every IPv4 interface (the generator reaches them at `address`)."""
    candidates = [tools["python"]] if "python" in tools else [sys.executable, "python3"]
    python = next((found for c in candidates if (found := host.which(c)) is not None), None)
    if python is None and "python" in tools:
        key = "hosts.target.tools.python"
        raise TargetError(f"{places.get(key, 'the scenario')}: {key}: {tools['python']} not found on {host.label}")
    if python is None:
        raise TargetError(f"{host.label}: no Python found (tried {', '.join(candidates)}); "
                          "give hosts.target.tools.python")
    reach = "127.0.0.1" if address == "localhost" else address
    try:
        ip = ipaddress.ip_address(reach)
    except ValueError:
        ip = None
    if ip is not None and ip.version != 4:
        raise TargetError(f"{host.label}: the bundled servers listen on IPv4; give hosts.target an IPv4 "
                          "address or a name")
    listen = reach if ip is not None and ip.is_loopback else "0.0.0.0"
    return Machine(host, python, host.facts().cpu_count, listen, reach, dict(tools), dict(places))


def recipes(spec: TargetSpec, there: Machine, folder: PurePosixPath, port: int,
            max_concurrency: int) -> list[tuple[str, Recipe]]:
    """The stack's processes in starting order (a back end before its front), each with the
    subfolder of the workspace it runs in."""
    kind, listen, python = spec.kind, there.listen, there.python
    render = dict(max_concurrency=max_concurrency, options=spec.nginx or NginxOptions(), cores_there=there.cores)
    if kind == "nginx-static":
        conf = nginx.render(port, workdir=folder, host=listen, server=nginx.static_server(folder / "www"), **render)
        front = nginx.recipe(there.program("nginx"), folder, conf)
        files = {**front.files, **{f"www/{name}": content for name, content in nginx.STATIC_FILES.items()}}
        return [("", dataclasses.replace(front, files=files))]
    if kind == "nginx-uwsgi":
        if (spec.uwsgi or UwsgiOptions()).socket != "unix":
            raise TargetError(f"{spec.display}: socket: tcp runs on this machine only, not yet on hosts.target")
        sock = folder / "uwsgi.sock"
        back = py.uwsgi_recipe(folder / "uwsgi", there.program("uwsgi"), str(sock), spec.uwsgi or UwsgiOptions(),
                               behind_nginx=True, app=spec.app)
        server, http_extra = nginx.uwsgi_server(sock, spec.limit_req)
        conf = nginx.render(port, workdir=folder / "nginx", host=listen, server=server, http_extra=http_extra,
                            per_client=2, **render)
        return [("uwsgi", back), ("nginx", nginx.recipe(there.program("nginx"), folder / "nginx", conf))]
    if kind == "uwsgi":
        return [("", py.uwsgi_recipe(folder, there.program("uwsgi"), f"{listen}:{port}",
                                     spec.uwsgi or UwsgiOptions(), behind_nginx=False, app=spec.app))]
    if kind == "flask-dev":
        return [("", py.flask_dev_recipe(folder, python, listen, port, spec.app))]
    if kind == "gunicorn":
        return [("", py.gunicorn_recipe(folder, python, listen, port, spec.gunicorn or GunicornOptions(),
                                        spec.app))]
    if kind in ("socket-threads", "socket-gevent"):
        return [("", py.socket_recipe(folder, python, listen, port, kind.split("-")[1],
                                      spec.socket or SocketOptions()))]
    raise TargetError(f"{spec.display}: {kind} is not a bundled stack")


def version(spec: TargetSpec, there: Machine) -> str | None:
    """As on this machine, asked of the binaries and the Python there."""
    found = []
    if spec.kind in ("nginx-static", "nginx-uwsgi"):
        found.append(nginx.version_in(there.host.capture([there.program("nginx"), "-v"]).stderr))
    if spec.kind in ("uwsgi", "nginx-uwsgi"):
        found.append(py.uwsgi_version_in(there.host.capture([there.program("uwsgi"), "--version"]).stdout))
    elif spec.kind != "nginx-static":
        try:
            answers = json.loads(there.run([there.python, "-c", _VERSIONS, *_PACKAGES], "read its packages' versions"))
        except ValueError:
            answers = None
        if isinstance(answers, dict):
            found.append(py.stack_version(spec.kind, spec.gunicorn, str(answers.get("python")),
                                          lambda name: str(answers[name]) if answers.get(name) else None))
    return " + ".join(v for v in found if v) or None


@contextlib.contextmanager
def start(host: SSHHost, spec: TargetSpec, workdir: Path, max_concurrency: int, address: str,
          tools: Mapping[str, str], places: Mapping[str, str],
          placed: SSHHost | None = None) -> Iterator[RunningTarget]:
    """Starts the stack on `host` (reached at `address`, its programs at `tools`, given at
    `places` in the scenario), yields it once ready from here, and stops it with no process left.
    `placed`: the same host with the target's CPUs (SSHHost.with_cpus), which starts the stack's
    servers, sized by those CPUs (nginx's workers on `auto`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    there = machine(host, address, tools, places)
    if placed is not None and placed.cpus:
        there = dataclasses.replace(there, cores=len(placed.cpus))
    starter = placed or host
    folder = PurePosixPath(str(host.workspace(workdir)))
    plan: list[tuple[str, Recipe]] = []
    up = False
    failed: ToolbenchError | None = None
    try:
        port = there.free_port()
        plan = recipes(spec, there, folder, port, max_concurrency)
        _stage(there, plan, folder, workdir)
        label = version(spec, there)
        with contextlib.ExitStack() as stack:
            procs: list[RemoteProcess] = []
            for sub, recipe in plan:
                procs.append(stack.enter_context(_running(there, recipe, folder / sub, workdir / sub, starter)))
                if recipe.name == "uwsgi" and spec.kind == "nginx-uwsgi":
                    _wait_unix_socket(there, folder / "uwsgi.sock", procs[-1], spec.ready.timeout_s)
            url = f"http://{there.reach}:{port}"
            wait_until_ready(spec.ready, url, spec.display, [(p, None) for p in procs])  # type: ignore[misc]
            for proc, (_, recipe) in zip(procs, plan):
                if proc.poll() is not None:  # nginx alone answers too (502): the pair is not ready
                    raise TargetError(f"{spec.display}: {recipe.name} exited with code {proc.returncode} before "
                                      "it was ready")
            pids = tuple(p.pid for p in procs)
            serial = itertools.count(1)
            up = True
            yield RunningTarget(base_url=url, label=spec.display, pid=procs[-1].pid, version=label, pids=pids,
                                sampler=lambda interval_s, series: RemoteSampler(
                                    there, folder, pids, port, interval_s, series, next(serial)),
                                cores=there.cores)
    except (TargetError, HostError) as exc:
        if up:
            raise  # it ran: a failure to stop it is not a failure to start
        failed = exc
    finally:
        logs = [f"{sub}/{name}" if sub else name for sub, recipe in plan
                for name in (f"{recipe.name}.stdout.txt", f"{recipe.name}.stderr.txt")]
        logs += [f"{sub}/error.log" if sub else "error.log" for sub, recipe in plan if recipe.name == "nginx"]
        host.collect(str(folder), logs, workdir)
    if failed is not None:  # with the last line its server wrote, fetched meanwhile
        tails = [log_tail(workdir / sub / name) for sub, recipe in plan
                 for name in (f"{recipe.name}.stderr.txt", "error.log")]
        raise TargetError(f"{failed}{next((t for t in tails if t), '')}") from None


def _stage(there: Machine, plan: Sequence[tuple[str, Recipe]], folder: PurePosixPath, workdir: Path) -> None:
    """A copy of every file in the run folder, then there; nginx's workers may run as another
    user (nginx started as root): the workspace is made readable to them."""
    folders, names = [], []
    for sub, recipe in plan:
        recipe.write(workdir / sub)
        folders += [str(folder / sub / name) for name in ("", *recipe.folders)]
        folders += [str((folder / sub / name).parent) for name in recipe.files]
        names += [str(PurePosixPath(sub) / name) for name in recipe.files]
    there.run(["mkdir", "-p", "--", *sorted(set(folders))], "make the server's folders")
    there.host.stage(workdir, str(folder), names)
    there.run(["chmod", "-R", "a+rX", "--", str(folder)], "open the server's folder to its workers")


@contextlib.contextmanager
def _running(there: Machine, recipe: Recipe, folder: PurePosixPath, here: Path,
             starter: SSHHost) -> Iterator[RemoteProcess]:
    """One process of the stack, in `folder` there, in a process group of its own, started by
    `starter` (the host, placed)."""
    proc = starter.start(["sh", "-c", _OUTPUT, recipe.name, *recipe.argv], cwd=folder,  # type: ignore[arg-type]
                            stdout=here / f"{recipe.name}.launch.stdout.txt",
                            stderr=here / f"{recipe.name}.launch.stderr.txt")
    assert isinstance(proc, RemoteProcess)
    # Its group, recorded in the run folder: to find it there should anything go wrong.
    (here / f"{recipe.name}.pgid").write_text(f"{there.host.label} {proc.pid}\n")
    try:
        yield proc
    finally:
        left = stop_group(there.host, proc, recipe.stop_signal)
    if left:
        raise TargetError(f"{recipe.name} on {there.host.label}: processes {left} of its group outlived SIGKILL")


def stop_group(host: Host, proc: RemoteProcess, stop_signal: int) -> list[int]:
    """The stop signal to the group, SIGKILL after GRACE_S, until none of it is left; what is left."""
    send(host, proc.pid, stop_signal)
    proc.wait(time.monotonic() - proc.started + GRACE_S)  # then SIGKILL to the group
    deadline = time.monotonic() + KILL_WAIT_S
    while True:
        left = members(host, proc.pid)
        if not left or time.monotonic() >= deadline:
            return left
        send(host, proc.pid, signal.SIGKILL)
        time.sleep(0.1)


def send(host: Host, pgid: int, sig: int) -> None:
    if pgid > 1:  # -0 and -1 would mean "our own group" and "everything": never
        host.capture(["sh", "-c", _SIGNAL, "sh", signal.Signals(sig).name[3:], str(pgid)])


def members(host: Host, pgid: int) -> list[int]:
    """The live processes of a process group there."""
    answer = host.capture(["sh", "-c", _MEMBERS, "sh", str(pgid)]).stdout
    return sorted(int(line) for line in answer.split() if line.isdigit())


def _wait_unix_socket(there: Machine, path: PurePosixPath, proc: RemoteProcess, timeout_s: float) -> None:
    """uWSGI behind nginx is ready once its socket accepts a connection."""
    deadline = time.monotonic() + timeout_s
    while there.host.capture([there.python, "-c", _UNIX_ACCEPTS, str(path)]).exit_code != 0:
        if proc.poll() is not None:
            raise TargetError(f"uwsgi on {there.host.label}: exited with code {proc.returncode} before it was ready")
        if time.monotonic() >= deadline:
            raise TargetError(f"uwsgi: {path} accepted no connection within ready.timeout = {timeout_s:g}s")
        time.sleep(0.1)


class RemoteSampler:
    """toolbench.servers.sampler started there for one cell; its series is fetched to `series`.
    A sampler that cannot run there costs the figures (absent, with a note), never the cell."""

    def __init__(self, there: Machine, folder: PurePosixPath, pids: Sequence[int], port: int, interval_s: float,
                 series: Path, serial: int) -> None:
        self._there, self._pids, self._port, self._interval_s = there, pids, port, interval_s
        self._series, self._remote = series, folder / f"server-{serial}.jsonl"
        self._folder = folder
        self._out = series.with_name("server-sampler.stdout.txt")
        self._err = series.with_name("server-sampler.stderr.txt")
        self._proc: RemoteProcess | None = None
        self._notes: list[str] = []

    def start(self) -> None:
        argv = [self._there.python, "-m", "toolbench.servers.sampler", f"{self._interval_s:g}", str(self._port),
                str(self._remote), *map(str, self._pids)]
        try:
            proc = self._there.host.start(argv, cwd=self._folder, stdout=self._out,  # type: ignore[arg-type]
                                          stderr=self._err)
        except HostError as exc:
            self._notes.append(f"the server's sampler did not start on {self._there.host.label}: {exc}")
            return
        assert isinstance(proc, RemoteProcess)
        self._proc = proc
        if not proc.pump_until(self._started, SAMPLER_START_S):
            self._notes.append(f"the server's sampler did not start on {self._there.host.label}"
                               + _last_line(self._err, ": "))

    def _started(self) -> bool:
        return self._out.exists() and self._out.read_bytes().startswith(b"started\n")

    def stop(self) -> cost.ServerReport:
        empty = cost.ServerReport([], self._interval_s, 0.0, None, None, 0.0, self._notes)
        if self._proc is None or not self._started():
            if self._proc is not None:
                self._proc.wait(0)
            return empty
        try:
            send(self._there.host, self._proc.pid, signal.SIGTERM)
            self._proc.wait(time.monotonic() - self._proc.started + SAMPLER_START_S)
            figures = json.loads(self._out.read_text().splitlines()[-1])
            self._there.host.get(str(self._remote), self._series)
            report = cost.read_report(figures if isinstance(figures, dict) else {}, self._series)
            return dataclasses.replace(report, notes=self._notes + report.notes)
        except (HostError, OSError, ValueError, TypeError, KeyError, IndexError) as exc:
            self._notes.append(f"the server's sampler on {self._there.host.label} gave no report: {exc}")
            return empty


def _last_line(path: Path, prefix: str) -> str:
    lines = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
    return f"{prefix}{lines[-1]}" if lines else ""
