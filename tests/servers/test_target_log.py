"""A target's own error log read per cell (toolbench.servers.target_log), against the real servers:
each kind of line is provoked from a real nginx, uWSGI or gunicorn started here, and counted from
the offset the log had at the "cell's" start to the one it had at its stop. The components each
stack reports (the manifest's `components`) come from the same starts."""
from __future__ import annotations

import dataclasses
import os
import signal
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

import pytest

from toolbench.contract.host import free_port
from toolbench.errors import SchemaError
from toolbench.record.manifest import Manifest, ScenarioRecord
from toolbench.record.observed import TargetLogCounts
from toolbench.run.serving import manifest_entry
from toolbench.scenario.targets import GunicornOptions, LimitReq, NginxOptions, ReadySpec, TargetSpec, UwsgiOptions
from toolbench.servers import python_stacks, stacks, target_log
from toolbench.servers.process import group_members, launched_recipe
from toolbench.servers.ready import wait_until_ready

pytestmark = pytest.mark.integration

WAIT_S = 30.0  # the longest a test waits for a server to write its line (a busy machine)


def get(url: str, times: int) -> dict[int | str, int]:
    """Status codes of `times` requests, one at a time."""
    codes: dict[int | str, int] = {}
    for _ in range(times):
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                code: int | str = answer.status
        except urllib.error.HTTPError as exc:
            code = exc.code
        except OSError as exc:
            code = type(exc).__name__
        codes[code] = codes.get(code, 0) + 1
    return codes


def wait_for(path: Path, text: bytes) -> None:
    deadline = time.monotonic() + WAIT_S
    while text not in (path.read_bytes() if path.exists() else b""):
        assert time.monotonic() < deadline, f"{path} never said {text!r}"
        time.sleep(0.1)


def counted(logs: tuple[str, ...], during: Callable[[], None]) -> TargetLogCounts:
    """The logs' lines written while `during` ran, as a cell's CellWatch reads them."""
    spans = target_log.mark(logs)
    during()
    found = target_log.read(target_log.ended(spans))
    assert found is not None
    return found


def workers_of(leader: int) -> list[int]:
    return [pid for pid in group_members(leader) if pid != leader]


def test_nginx_limit_req_rejections_and_a_refused_upstream_counted(tmp_path: Path) -> None:
    spec = TargetSpec(kind="nginx-uwsgi", name="limited", limit_req=LimitReq(rate="1r/s"),
                      uwsgi=UwsgiOptions(processes=1), nginx=NginxOptions(workers=1))
    with stacks.start(spec, tmp_path, 10) as target:
        assert [Path(p).name for p in target.logs] == ["error.log", "uwsgi.stderr.txt"]
        get(target.base_url + "/", 3)  # before the cell: not counted
        codes: dict[int | str, int] = {}
        found = counted(target.logs, lambda: codes.update(get(target.base_url + "/", 20)))
        assert codes.get(503, 0) >= 15, codes  # 1 r/s without burst: nearly all refused
        assert found.limit_req == codes[503]  # one line per refusal, none from before the cell
        assert found.logs == ["nginx", "uwsgi"] and found.lines_unread == 0
        assert "requests refused by nginx's limit_req (503)" in target_log.phrase(found)

        os.killpg(target.pids[1], signal.SIGKILL)  # uWSGI gone, its socket file left: connect() refused
        while group_members(target.pids[1]):
            time.sleep(0.05)
        time.sleep(1.1)  # the limit lets one request a second through, to the missing upstream
        answered: dict[int | str, int] = {}
        gone = counted(target.logs, lambda: answered.update(get(target.base_url + "/", 1)))
        assert answered == {502: 1} and gone.upstream_refused == 1 and gone.limit_req == 0


def test_uwsgi_listen_queue_full_counted(tmp_path: Path) -> None:
    spec = TargetSpec(kind="uwsgi", name="u", uwsgi=UwsgiOptions(processes=1, listen=4))
    with stacks.start(spec, tmp_path, 10) as target:
        assert target.pid is not None and target.port is not None
        stderr = Path(target.logs[0])
        spans = target_log.mark(target.logs)
        stopped = workers_of(target.pid)
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)  # nothing accepts: the queue fills
        held = []
        try:
            for _ in range(12):
                sock = socket.socket()
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", target.port))
                held.append(sock)
            wait_for(stderr, b"listen queue of socket")
            found = target_log.read(target_log.ended(spans))
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
            for sock in held:
                sock.close()
    assert found is not None and found.listen_queue_full >= 1 and found.logs == ["uwsgi"]


def test_gunicorn_worker_timeout_counted(tmp_path: Path) -> None:
    """gunicorn's own `timeout` (1 s here; toolbench leaves its default): a stopped worker is killed."""
    port = free_port("127.0.0.1")
    recipe = python_stacks.gunicorn_recipe(tmp_path, sys.executable, "127.0.0.1", port, GunicornOptions(workers=1))
    recipe = dataclasses.replace(recipe, files={"gunicorn.conf.py": recipe.files["gunicorn.conf.py"] + "timeout = 1\n"})
    stderr = tmp_path / "gunicorn.stderr.txt"
    with launched_recipe(recipe, tmp_path) as proc:
        wait_until_ready(ReadySpec(), f"http://127.0.0.1:{port}", "gunicorn", [(proc, stderr)])
        spans = target_log.mark([str(stderr)])
        for pid in workers_of(proc.pid):
            os.kill(pid, signal.SIGSTOP)
        wait_for(stderr, b"WORKER TIMEOUT")
        found = target_log.read(target_log.ended(spans))
    assert found is not None and found.worker_timeout == 1 and found.logs == ["gunicorn"]
    # INFO lines (the arbiter booting a new worker) are no error: not counted
    assert found.limit_req == found.listen_queue_full == 0


def test_nginx_worker_connections_not_enough_counted(tmp_path: Path) -> None:
    spec = TargetSpec(kind="nginx-static", name="small", nginx=NginxOptions(workers=1, worker_connections=8))
    with stacks.start(spec, tmp_path, 1) as target:
        assert target.port is not None
        spans = target_log.mark(target.logs)
        held = [socket.create_connection(("127.0.0.1", target.port), timeout=5) for _ in range(16)]
        try:
            wait_for(Path(target.logs[0]), b"worker_connections are not enough")
            found = target_log.read(target_log.ended(spans))
        finally:
            for sock in held:
                sock.close()
    assert found is not None and found.worker_connections >= 1 and found.logs == ["nginx"]


def test_lines_not_of_their_log_are_unread_and_bounded(tmp_path: Path) -> None:
    log = tmp_path / "error.log"
    real = (b'2026/12/02 11:12:00 [error] 20827#20827: *10 limiting requests, excess: 0.777 by zone "perclient", '
            b'client: 127.0.0.1, server: , request: "GET / HTTP/1.1", host: "127.0.0.1:49685"\n')
    log.write_bytes(real)
    spans = target_log.mark([str(log)])
    with log.open("ab") as out:
        out.write(real + b"x" * (target_log.MAX_LINE * 3) + b"\n" + b"limiting requests, excess: 1 by zone\n"
                  + b"2026/12/02 11:12:00 [notice] 1#1: signal process started\n" + real)
    found = target_log.read(target_log.ended(spans))
    # the line before the start is left out; the long line and the unprefixed one are not read as nginx's
    assert found is not None and (found.limit_req, found.lines_unread, found.other) == (2, 2, 0)
    log.write_bytes(b"")  # replaced: shorter than where it stood
    assert target_log.read(target_log.ended(spans)) is None
    assert target_log.mark([str(tmp_path / "access.log")]) == []  # not a log it reads
    with pytest.raises(SchemaError):
        TargetLogCounts(limit_req=-1)


def test_components_of_nginx_static_and_a_python_stack_in_the_manifest(tmp_path: Path) -> None:
    nginx_spec = TargetSpec(kind="nginx-static", name="static")
    gunicorn_spec = TargetSpec(kind="gunicorn", name="g", gunicorn=GunicornOptions(worker_class="gevent"))
    with stacks.start(nginx_spec, tmp_path / "n", 4) as target:
        static = manifest_entry("static", nginx_spec, target)
    with stacks.start(gunicorn_spec, tmp_path / "g", 4) as target:
        python = manifest_entry("g", gunicorn_spec, target)
    assert [c.name for c in static.components] == ["nginx"]
    assert static.version == f"nginx {static.components[0].version}"
    assert [c.name for c in python.components] == ["gunicorn", "gevent", "Flask", "Werkzeug", "Python"]
    assert python.components[-1].version == ".".join(map(str, sys.version_info[:3]))
    manifest = Manifest(ScenarioRecord("s"), targets=[static, python])
    assert Manifest.from_dict(manifest.to_dict()).targets == [static, python]
    old = manifest.to_dict()
    for record in old["targets"]:
        del record["components"]  # a manifest written before components were recorded
    assert [t.components for t in Manifest.from_dict(old).targets] == [[], []]
