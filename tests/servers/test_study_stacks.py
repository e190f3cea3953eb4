"""The stack options the studies' articles need, really started: nginx reaching uWSGI over TCP
(study 000's `uwsgi_pass 127.0.0.1:5000`), gevent's `Pool(N)` server (study 003), hello2's template
route at a target's own path (study 000), and a local target given the scenario's ulimits (the
thread limit of study 003's thread-per-connection server)."""
from __future__ import annotations

import re
import resource
import socket
import subprocess
import threading
import time
from pathlib import Path, PurePosixPath

import pytest
import yaml

from conftest import need
from toolbench.errors import TargetError
from toolbench.run import plan
from toolbench.scenario import read as scenario
from toolbench.scenario.targets import parse_target
from toolbench.scenario.yamlread import Node
from toolbench.servers import remote
from toolbench.servers.stacks import start

pytestmark = pytest.mark.integration


def spec_of(entry: str, name: str = "x"):
    return parse_target(Node(yaml.compose(entry), "t.yaml", f"targets.{name}"), name)


def get(url: str, timeout_s: float = 30) -> tuple[bytes, bytes]:
    """The status line and body of one HTTP/1.0 GET."""
    host, rest = url.split("//", 1)[1].split("/", 1) if url.count("/") > 2 else (url.split("//", 1)[1], "")
    address, port = host.split(":")
    with socket.create_connection((address, int(port)), timeout=timeout_s) as sock:
        sock.sendall(f"GET /{rest} HTTP/1.0\r\nHost: {address}\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0], body


def test_nginx_reaches_uwsgi_over_tcp_when_asked(tmp_path):
    spec = spec_of("{server: nginx-uwsgi, workers: 1, processes: 1, socket: tcp}")
    with start(spec, tmp_path) as target:
        status, body = get(target.base_url + "/")
        assert b" 200 " in status and body == b"Hello, World!"
        ini = (tmp_path / "uwsgi" / "uwsgi.ini").read_text()
        listen = re.search(r"^socket = 127\.0\.0\.1:(\d+)$", ini, re.M)
        assert listen and "chmod-socket" not in ini and "http-socket" not in ini
        port = listen.group(1)
        assert f'uwsgi_pass "127.0.0.1:{port}";' in (tmp_path / "nginx" / "nginx.conf").read_text()
        # uWSGI itself listens there, speaking the uwsgi protocol (not HTTP) to nginx.
        socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()


def _served_together(url: str, clients: int) -> tuple[float, list[bytes]]:
    """`clients` requests sent at once, each on its own connection: the wall time until the last
    answer, and the answers."""
    answers: list[bytes] = []
    lock = threading.Lock()

    def one() -> None:
        status, body = get(url)
        with lock:
            answers.append(status + b" " + body)

    threads = [threading.Thread(target=one) for _ in range(clients)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return time.monotonic() - began, answers


def test_the_gevent_pool_server_serves_at_most_its_pool_at_once(tmp_path):
    # 6 connections that each sleep 1 s: a pool of 2 serves them in 3 rounds (at least 3 s,
    # however busy the machine); unbounded gevent serves them together in about 1 s.
    with start(spec_of("{server: socket-gevent, sleep: 1s, pool: 2}"), tmp_path) as target:
        took, answers = _served_together(target.base_url + "/", 6)
    config = (tmp_path / "socket-gevent.json").read_text()
    assert '"pool": 2' in config
    assert answers == [b"HTTP/1.0 200 OK Hello, World!"] * 6
    assert took >= 2.9, f"6 requests of 1 s through a pool of 2 took {took:.2f} s: not capped"


def test_a_targets_own_path_sends_its_cells_to_hello2s_template_route(tmp_path):
    need("ab")
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntargets:\n  hello1: {server: flask-dev}\n"
                    "  hello2: {server: flask-dev, path: /hello/libai}\n"
                    "matrix: {tool: [ab], concurrency: [4]}\nstop: {requests: 40}\n")
    cells = {p.cell.target: p.cell for p in plan.expand(scenario.load(path))}
    assert cells["hello1"].request.path == "/" and cells["hello2"].request.path == "/hello/libai"
    template = b"<!doctype html>\n<title>Hello from Flask</title>\n\n  <h1>Hello libai!</h1>\n"
    with start(spec_of("{server: flask-dev, path: /hello/libai}"), tmp_path / "target") as target:
        url = cells["hello2"].at(target.base_url).url
        assert url == target.base_url + "/hello/libai"
        status, body = get(url)
        assert b" 200 " in status and body == template
        ab = subprocess.run(["ab", "-q", "-n", "40", "-c", "4", url], capture_output=True, text=True, timeout=60)
    assert ab.returncode == 0, ab.stderr
    assert f"Document Length:        {len(template)} bytes" in ab.stdout
    assert "Complete requests:      40" in ab.stdout and "Failed requests:        0" in ab.stdout


def _soft_limit(pid: int, row: str) -> int:
    line = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if line.startswith(row))
    return int(line[len(row):].split()[0])


def test_a_local_target_gets_the_scenarios_ulimits_as_the_tools_do(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if hard != resource.RLIM_INFINITY and hard < 3000:
        pytest.skip(f"the hard process limit is {hard}")
    lowered = 1000 if soft == resource.RLIM_INFINITY or soft > 1000 else soft
    wanted = 2000 if hard == resource.RLIM_INFINITY else min(2000, hard)
    resource.setrlimit(resource.RLIMIT_NPROC, (lowered, hard))
    try:
        with start(spec_of("{server: socket-threads, sleep: 10ms}"), tmp_path / "raised",
                   limits={"nproc": wanted}) as target:
            assert target.pid is not None and _soft_limit(target.pid, "Max processes") == wanted
        with start(spec_of("{server: socket-threads, sleep: 10ms}"), tmp_path / "as-is") as target:
            assert target.pid is not None and _soft_limit(target.pid, "Max processes") == lowered
        assert resource.getrlimit(resource.RLIMIT_NPROC) == (lowered, hard)  # ours put back after each start
    finally:
        resource.setrlimit(resource.RLIMIT_NPROC, (soft, hard))


def test_uwsgi_over_tcp_is_refused_on_a_target_host_not_run_on_a_unix_socket_instead():
    there = remote.Machine(None, "/usr/bin/python3", 2, "127.0.0.1", "127.0.0.1", {}, {})  # type: ignore[arg-type]
    with pytest.raises(TargetError, match="socket: tcp runs on this machine only"):
        remote.recipes(spec_of("{server: nginx-uwsgi, socket: tcp}"), there, PurePosixPath("/w"), 8080, 10)
