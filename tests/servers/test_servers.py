"""Every bundled server stack, really started: it answers, its cost is measured under a bounded
load (ab), and it stops with none of its processes left and its port closed. Readiness variants
and their errors against real processes."""
from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from conftest import need
from toolbench.contract.host import free_port
from toolbench.errors import TargetError
from toolbench.scenario.targets import TargetSpec, parse_target
from toolbench.scenario.yamlread import Node
from toolbench.servers.cost import ServerMonitor, summarize
from toolbench.servers.process import RunningTarget, group_members
from toolbench.servers.ready import http_get
from toolbench.servers.stacks import start

pytestmark = pytest.mark.integration

FLASK = "Hello, World!"  # every stack's answer at /
TEMPLATE = "<h1>Hello libai!</h1>"

# entry, version pattern, processes in its tree, listen backlog asked for, requests, concurrency
STACKS = [
    ("{server: nginx-static, workers: 2}", r"^nginx \d+\.\d+", 3, 4096, 3000, 4),  # fast: more, for CPU ticks
    ("{server: flask-dev}", r"^Flask \d+\.\d+\.\d+ \(Werkzeug \d", 1, 128, 200, 4),
    ("{server: gunicorn, workers: 2}", r"^gunicorn \d+\.\d+\.\d+$", 3, 2048, 200, 4),
    ("{server: gunicorn, worker_class: gevent}", r"^gunicorn \d+\.\d+\.\d+ \(gevent \d", 2, 2048, 200, 4),
    ("{server: gunicorn, worker_class: gthread, threads: 4}", r"^gunicorn \d", 2, 2048, 200, 4),
    ("{server: uwsgi, processes: 2, threads: 2}", r"^uWSGI 2\.\d+", 3, 100, 200, 4),
    ("{server: uwsgi, gevent: 50, listen: 200}", r"^uWSGI 2\.\d+", 2, 200, 200, 4),
    ("{server: nginx-uwsgi, workers: 1, processes: 2}", r"^nginx \d+\.\d+\S* \+ uWSGI 2\.", 2 + 3, 4096, 200, 4),
    # Sleep-bound: 40 requests cost them less than the 10 ms clock tick CPU time is counted in
    # (a CI run once read 0.0 s): 200 at c20, 0.5 s, give them several ticks.
    ("{server: socket-threads, sleep: 50ms}", r"^Python 3\.", 1, 500, 200, 20),
    ("{server: socket-gevent, sleep: 50ms, backlog: 64}", r"^gevent \d+\.\d+\.\d+ on Python 3\.", 1, 64, 200, 20),
]
SOMAXCONN = int(Path("/proc/sys/net/core/somaxconn").read_text())


def spec_of(entry: str, name: str = "x") -> TargetSpec:
    return parse_target(Node(yaml.compose(entry), "t.yaml", f"targets.{name}"), name)


def body(url: str) -> str:
    with socket.create_connection(_address(url), timeout=10) as sock:
        path = "/" + url.split("/", 3)[3] if url.count("/") >= 3 else "/"
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, content = data.partition(b"\r\n\r\n")
    assert head.split(b" ")[1] == b"200", head
    return content.decode()


def _address(url: str) -> tuple[str, int]:
    host, port = url.split("/")[2].split(":")
    return host, int(port)


def tree_pids(target: RunningTarget) -> set[int]:
    found = set()
    for pid in target.pids:
        root = psutil.Process(pid)
        found |= {pid} | {p.pid for p in root.children(recursive=True)}
    return found


def assert_all_gone(pids: set[int], target: RunningTarget) -> None:
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert alive == []
    assert all(group_members(pid) == [] for pid in target.pids)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(_address(target.base_url), timeout=5).close()


@pytest.mark.parametrize("entry, version, processes, backlog, requests, concurrency", STACKS,
                         ids=[s[0].strip("{}") for s in STACKS])
def test_a_bundled_stack_starts_answers_is_measured_and_stops_clean(tmp_path, entry, version, processes, backlog,
                                                                    requests, concurrency):
    need("ab"), need("ss")
    spec = spec_of(entry)
    with start(spec, tmp_path / "target", max_concurrency=concurrency) as target:
        assert target.base_url.startswith("http://127.0.0.1:") and target.label == "x"
        assert re.match(version, target.version or ""), target.version
        pids = tree_pids(target)
        deadline = time.monotonic() + 10
        while len(pids) < processes and time.monotonic() < deadline:  # gunicorn forks its workers
            time.sleep(0.05)  # one after another: ready on the first (a CI run saw 2 of 3)
            pids = tree_pids(target)
        assert len(pids) == processes
        assert body(target.base_url + "/") == FLASK
        if "socket" not in entry and "nginx-static" not in entry:
            assert TEMPLATE in body(target.base_url + "/hello/libai")
            assert "<h1>Hello, World!</h1>" in body(target.base_url + "/hello/")
        monitor = ServerMonitor(target.pids, target.port, interval_s=0.1, series_path=tmp_path / "server.jsonl")
        monitor.start()
        ab = subprocess.run(["ab", "-q", "-n", str(requests), "-c", str(concurrency), target.base_url + "/"],
                            capture_output=True, text=True, timeout=120)
        report = monitor.stop()
    assert ab.returncode == 0 and f"Complete requests:      {requests}" in ab.stdout
    assert "Failed requests:        0" in ab.stdout and "Non-2xx" not in ab.stdout
    cost = summarize(report, requests)
    assert cost.cpu_user_s is not None and cost.cpu_system_s is not None
    assert cost.cpu_user_s + cost.cpu_system_s > 0 and cost.cpu_us_per_request > 0
    assert cost.cpu_us_per_request == pytest.approx((cost.cpu_user_s + cost.cpu_system_s) * 1e6 / requests)
    assert cost.processes_peak == processes and cost.rss_peak_bytes > 1_000_000 and cost.threads_peak >= processes
    assert cost.open_files_peak > cost.sockets_peak >= 1
    # ss ran at least once, at the end: the server's listening socket, with the backlog the kernel applies.
    assert cost.listen_backlog == min(backlog, SOMAXCONN) and cost.accept_queue_peak is not None
    assert cost.samples == len((tmp_path / "server.jsonl").read_text().splitlines()) >= 1  # at least the last
    assert cost.wall_s > 0 and cost.monitor_cpu_s > 0 and cost.notes == []
    assert_all_gone(pids, target)
    assert (tmp_path / "target").is_dir()


def test_the_gevent_socket_server_runs_on_one_thread_and_the_threaded_one_on_many(tmp_path):
    need("ab")
    seen = {}
    for kind in ("socket-gevent", "socket-threads"):
        with start(spec_of(f"{{server: {kind}, sleep: 1s}}"), tmp_path / kind) as target:
            ab = subprocess.Popen(["ab", "-q", "-n", "20", "-c", "20", target.base_url + "/"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                # Every connection sleeps a whole second: sample until ab has all 20 of them open.
                monitor = ServerMonitor(target.pids, target.port, interval_s=0.05)
                monitor.start()
                ab.wait(timeout=60)
                seen[kind] = summarize(monitor.stop(), 20)
            finally:
                ab.kill()
    assert seen["socket-gevent"].threads_peak == 1
    assert seen["socket-threads"].threads_peak > 1


def test_nginx_in_front_of_uwsgi_applies_the_rate_limit(tmp_path):
    # One request a minute and no burst: the readiness check takes the only one.
    spec = spec_of("{server: nginx-uwsgi, workers: 1, limit_req: {rate: 1r/m, burst: 0}}")
    with start(spec, tmp_path) as target:
        assert http_get(target.base_url + "/", 10) == 503
    conf = (tmp_path / "nginx" / "nginx.conf").read_text()
    assert "limit_req_zone $binary_remote_addr zone=perclient:10m rate=1r/m;" in conf
    assert "limit_req zone=perclient nodelay;" in conf and "uwsgi_pass \"unix:/tmp/toolbench-uwsgi-" in conf
    socket_line = re.search(r"^socket = (.+)$", (tmp_path / "uwsgi" / "uwsgi.ini").read_text(), re.M)
    assert socket_line and not Path(socket_line.group(1)).parent.exists()  # its folder is removed


def test_readiness_by_tcp_by_status_and_by_waiting(tmp_path):
    with start(spec_of("{server: socket-threads, ready: {tcp: true}}"), tmp_path / "tcp") as target:
        assert body(target.base_url) == FLASK
    status = "{server: flask-dev, ready: {http: /hello/x, status: 200, timeout: 30s}}"
    with start(spec_of(status), tmp_path / "status") as target:
        assert "Hello x!" in body(target.base_url + "/hello/x")
    port = free_port()
    waited = f"{{command: 'sleep 30', url: 'http://127.0.0.1:{port}', ready: {{wait: 200ms}}}}"
    with start(spec_of(waited), tmp_path / "wait") as target:
        assert target.pid is not None and psutil.Process(target.pid).name() == "sleep"
    assert group_members(target.pid) == []


@pytest.mark.parametrize("entry, message", [
    ("{{command: 'sleep 30', url: 'http://127.0.0.1:{port}', ready: {{timeout: 500ms}}}}",
     r"^x: http://127.0.0.1:\d+/ was not ready within ready.timeout = 0.5s \(.*refused"),
    ("{{command: 'sleep 30', url: 'http://127.0.0.1:{port}', ready: {{tcp: true, timeout: 300ms}}}}",
     r"^x: 127.0.0.1:\d+ accepted no TCP connection within ready.timeout = 0.3s"),
    ("{{server: flask-dev, ready: {{http: /nope, status: 200, timeout: 2s}}}}",
     r"^x: http://127.0.0.1:\d+/nope was not ready within ready.timeout = 2s \(HTTP 404, not 200\)"),
    ("{{command: 'sh -c \"echo it broke >&2; exit 3\"', url: 'http://127.0.0.1:{port}', ready: {{wait: 5s}}}}",
     r"^x: exited with code 3 before it was ready: it broke$"),
    ("{{url: 'http://127.0.0.1:{port}', ready: {{timeout: 200ms}}}}",
     r"^x: http://127.0.0.1:\d+/ was not ready within ready.timeout = 0.2s"),
])
def test_a_target_never_ready_fails_naming_its_timeout_and_leaves_nothing(tmp_path, entry, message):
    with pytest.raises(TargetError, match=message):
        with start(spec_of(entry.format(port=free_port())), tmp_path):
            pass
    assert _processes_in(tmp_path) == []


def _processes_in(folder: Path) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cwd"]):
        if (proc.info.get("cwd") or "").startswith(str(folder)):
            found.append(proc.pid)
    return found


def test_the_monitor_notes_a_server_that_exits_midway(tmp_path):
    with start(spec_of("{server: socket-gevent}"), tmp_path) as target:
        monitor = ServerMonitor(target.pids, target.port, interval_s=0.05)
        monitor.start()
        psutil.Process(target.pid).kill()
        psutil.Process(target.pid).wait(10)
        cost = summarize(monitor.stop(), 0)
    assert cost.cpu_us_per_request is None and cost.processes_peak in (None, 1)
    if cost.cpu_user_s is None:  # killed before the monitor's first sample
        assert cost.notes == ["the server exited before the monitor's first sample: its CPU time is absent"]
    else:
        assert cost.notes == ["the server exited before its monitor stopped: the CPU time it spent after the "
                              "monitor's last sample of it is not counted"]


def test_flask_dev_runs_with_the_interpreter_toolbench_runs_on(tmp_path):
    with start(spec_of("{server: flask-dev}"), tmp_path) as target:
        assert psutil.Process(target.pid).exe() == str(Path(sys.executable).resolve())
