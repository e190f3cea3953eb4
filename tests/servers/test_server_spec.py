"""Target specs parsed from YAML, the quoting of generated server configs, and the server
monitor's readings from recorded `ss` output. No server runs here (see test_servers.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import FIXTURES
from toolbench.errors import ScenarioError, TargetError
from toolbench.hosts.monitor_read import parse_ss_server
from toolbench.record.schema import RunResult, ServerCost, cpu_us_per_request
from toolbench.scenario.targets import (GunicornOptions, LimitReq, NginxOptions, ReadySpec, SocketOptions, UwsgiOptions,
                                        parse_target)
from toolbench.scenario.yamlread import Node
from toolbench.servers import nginx, python_stacks
from toolbench.servers.cost import summarize

TARGETS = """\
targets:
  nginx2: {server: nginx-static, workers: 2, keepalive_requests: 100}
  dev: {server: flask-dev, label: Flask dev server}
  gevent4: {server: gunicorn, worker_class: gevent, workers: 4}
  gthread: {server: gunicorn, worker_class: gthread, threads: 8, worker_connections: 200}
  uwsgi: {server: uwsgi, processes: 4, threads: 2}
  front:
    server: nginx-uwsgi
    gevent: 100
    limit_req: {rate: 50r/s, burst: 20}
    ready: {http: /hello/x, status: 200, timeout: 30s}
  threads: {server: socket-threads, ready: {tcp: true}}
  green: {server: socket-gevent, sleep: 250ms, backlog: 2048, ready: {wait: 1s}}
  cmd: {command: "python3 -m http.server 8000", url: "http://127.0.0.1:8000/", ready: {path: /, timeout: 10s}}
  running: {url: "http://127.0.0.1:8080"}
"""


def targets(text: str) -> dict[str, Node]:
    return Node(yaml.compose(text), "s.yaml", "").items()["targets"].items()


def parsed(text: str) -> dict:
    return {name: parse_target(node, name) for name, node in targets(text).items()}


def test_every_kind_becomes_a_typed_spec_with_defaults():
    t = parsed(TARGETS)
    assert t["nginx2"].kind == "nginx-static" and t["nginx2"].nginx == NginxOptions(2, None, 100)
    assert t["nginx2"].ready == ReadySpec() and t["nginx2"].where == "s.yaml:2" and t["nginx2"].display == "nginx2"
    assert t["dev"].display == "Flask dev server" and t["dev"].bundled
    assert t["gevent4"].gunicorn == GunicornOptions(worker_class="gevent", workers=4)
    assert t["gthread"].gunicorn == GunicornOptions("gthread", 1, 8, 200)
    assert t["uwsgi"].uwsgi == UwsgiOptions(processes=4, threads=2)
    front = t["front"]
    assert front.uwsgi == UwsgiOptions(gevent=100) and front.nginx == NginxOptions()
    assert front.limit_req == LimitReq("50r/s", 20, True)
    assert front.ready == ReadySpec(mode="http", path="/hello/x", status=200, timeout_s=30.0)
    assert t["threads"].socket == SocketOptions(0.5, 500) and t["threads"].ready.mode == "tcp"
    assert t["green"].socket == SocketOptions(0.25, 2048) and t["green"].ready == ReadySpec(mode="wait", wait_s=1.0)
    assert t["cmd"].kind == "command" and t["cmd"].url == "http://127.0.0.1:8000"
    assert t["cmd"].ready == ReadySpec(path="/", timeout_s=10.0)
    assert t["running"].kind == "url" and not t["running"].bundled and t["running"].command is None


@pytest.mark.parametrize("entry, message", [
    ("{server: apache}", r"s.yaml:2: targets.x.server: expected one of nginx-static, flask-dev, gunicorn"),
    ("{server: gunicorn, processes: 4}", r"s.yaml:2: targets.x.processes: unknown key \(expected one of server, "
                                         r"label, ready, restart, path, worker_class, workers, threads, worker_connections(, app)?\)"),
    ("{server: flask-dev, threads: 4}", r"s.yaml:2: targets.x.threads: unknown key"),
    ("{server: nginx-static, workers: 0}", r"s.yaml:2: targets.x.workers: expected a positive integer, got '0'"),
    ("{server: nginx-static, workers: 5000}", r"s.yaml:2: targets.x.workers: expected at most 1024, got 5000"),
    ("{server: gunicorn, worker_class: eventlet}", r"targets.x.worker_class: expected one of sync, gevent, gthread"),
    ("{server: gunicorn, threads: 4}", r"targets.x.threads: threads > 1 needs worker_class: gthread"),
    ("{server: gunicorn, worker_connections: 10}", r"targets.x.worker_connections: a sync worker serves one client"),
    ("{server: uwsgi, gevent: 10, threads: 2}", r"targets.x.threads: uWSGI runs either `threads` or `gevent`"),
    ("{server: nginx-uwsgi, limit_req: {rate: fast}}", r"targets.x.limit_req.rate: expected a rate like 50r/s"),
    ("{server: nginx-uwsgi, limit_req: {burst: 5}}", r"targets.x.limit_req: missing required key 'rate'"),
    ("{server: nginx-uwsgi, limit_req: {rate: 5r/s, burst: -1}}", r"targets.x.limit_req.burst: expected an integer"),
    ("{server: socket-threads, sleep: 2m}", r"targets.x.sleep: expected at most 60s, got 120s"),
    ("{server: socket-gevent, backlog: 70000}", r"targets.x.backlog: expected at most 65535"),
    ("{server: flask-dev, ready: {tcp: true, wait: 1s}}", r"targets.x.ready.wait: give one of http, tcp or wait"),
    ("{server: flask-dev, ready: {tcp: false}}", r"targets.x.ready.tcp: expected `tcp: true`"),
    ("{server: flask-dev, ready: {status: 999}}", r"targets.x.ready.status: expected `any` or an HTTP status"),
    ("{server: flask-dev, ready: {tcp: true, status: 200}}", r"targets.x.ready.status: `status` goes with `http`"),
    ("{server: flask-dev, ready: {wait: 1s, timeout: 5s}}", r"targets.x.ready.timeout: `wait` has no timeout"),
    ("{server: flask-dev, ready: {timeout: 0s}}", r"targets.x.ready.timeout: expected a duration above 0"),
    ("{server: flask-dev, ready: {http: nope}}", r"targets.x.ready.http: expected a path starting with '/'"),
    ("{server: flask-dev, ready: {when: now}}", r"targets.x.ready.when: unknown key"),
    ("{url: 'ftp://127.0.0.1/'}", r"targets.x.url: expected an http:// or https:// URL"),
    ("{url: 'http://127.0.0.1:99999'}", r"targets.x.url: not a valid URL"),
    ("{command: 'sleep 1'}", r"s.yaml:2: targets.x: expected `server` \(one of nginx-static"),
    ("{command: 'sleep 1', url: 'http://127.0.0.1:1', workers: 2}", r"targets.x.workers: unknown key"),
    ("nginx-static", r"s.yaml:2: targets.x: expected a mapping, got 'nginx-static'"),
])
def test_errors_name_the_file_line_and_key(entry, message):
    with pytest.raises(ScenarioError, match=message):
        parsed(f"targets:\n  x: {entry}\n")


def test_a_target_name_must_be_plain():
    node = targets("targets:\n  x: {server: flask-dev}\n")["x"]
    for bad in ("../etc", "a..b", "-x", "a b"):
        with pytest.raises(ScenarioError, match=r"s.yaml:2: targets.x: target not a valid name"):
            parse_target(node, bad)


def test_nginx_values_are_quoted_and_a_dollar_is_refused():
    assert nginx.quote('/tmp/a "b"\\c') == '"/tmp/a \\"b\\"\\\\c"'
    for bad in ("/tmp/$host", "/tmp/a\nb"):
        with pytest.raises(TargetError, match="nginx: cannot put"):
            nginx.quote(bad)


def test_nginx_connections_are_sized_for_the_highest_concurrency(tmp_path):
    def conf(**kw) -> str:
        args = dict(workdir=tmp_path, host="127.0.0.1", options=NginxOptions(), max_concurrency=0, server="")
        return nginx.render(8080, **(args | kw))

    assert "worker_connections 1024;" in conf()  # never below nginx's usual 1024
    assert "worker_connections 5064;" in conf(max_concurrency=5000)
    assert "worker_connections 10064;" in conf(max_concurrency=5000, per_client=2)  # in front of uWSGI
    assert "worker_connections 300;" in conf(options=NginxOptions(worker_connections=300), max_concurrency=5000)
    assert f"worker_processes {len(os.sched_getaffinity(0))};" in conf()
    assert "worker_processes 3;" in conf(options=NginxOptions(workers=3))
    assert f'pid "{tmp_path}/nginx.pid";' in conf()
    with pytest.raises(TargetError, match="nginx: listens on an IPv4 address, not 'localhost; daemon on'"):
        conf(host="localhost; daemon on")


def test_uwsgi_values_are_checked_and_gunicorn_values_are_python_literals():
    for bad in ("/tmp/%d", "/tmp/$(HOME)", "/tmp/@(file)", "a b", "x\ny = 1"):
        with pytest.raises(TargetError, match="uwsgi: cannot put"):
            python_stacks.ini_value(bad)
    ini = python_stacks.uwsgi_ini("/tmp/toolbench-uwsgi-x/uwsgi.sock", UwsgiOptions(processes=4, gevent=10), True)
    assert "socket = /tmp/toolbench-uwsgi-x/uwsgi.sock\n" in ini and "chmod-socket = 666\n" in ini
    assert "processes = 4\n" in ini and "gevent = 10\n" in ini and "threads" not in ini
    assert "module = toolbench.servers.apps.flask_hello:create_app()\n" in ini
    settings: dict = {}
    exec(python_stacks.gunicorn_conf(4000, GunicornOptions("gevent", 4)), {}, settings)
    assert settings["bind"] == ["127.0.0.1:4000"] and settings["worker_class"] == "gevent" and settings["workers"] == 4
    assert settings["accesslog"] is None and settings["control_socket_disable"] is True


def test_the_served_apps_do_not_carry_the_catalogue():
    code = ("import sys, toolbench.servers.apps.flask_hello, toolbench.servers.apps.socket_server;"
            "print(sorted(m for m in ('psutil', 'yaml', 'toolbench.scenario.targets', 'toolbench.record.schema') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_server_side_ss_output_gives_states_and_the_listen_queue():
    load = parse_ss_server((FIXTURES / "ss" / "6.1.0-server-load.txt").read_text())
    assert load.states == {"ESTAB": 30, "TIME-WAIT": 22} and load.established == 30
    assert load.accept_queue == 0 and load.backlog == 500
    queue = parse_ss_server((FIXTURES / "ss" / "6.1.0-server-queue.txt").read_text())
    assert queue.states == {"ESTAB": 5} and queue.accept_queue == 5 and queue.backlog == 4
    nothing = parse_ss_server("")
    assert nothing.states == {} and nothing.accept_queue is None and nothing.backlog is None


def test_cpu_per_request_is_absent_without_requests_and_a_missing_report_is_all_absent():
    assert cpu_us_per_request(0.3, 0.1, 200) == pytest.approx(2000.0)
    assert cpu_us_per_request(0.3, 0.1, 0) is None and cpu_us_per_request(None, None, 10) is None
    empty = summarize(None, 100)
    assert empty == ServerCost() and empty.cpu_user_s is None and empty.connections_peak is None


def test_server_cost_round_trips_in_a_run_result(tmp_path: Path):
    from helpers.results import full_result
    cost = ServerCost(cpu_user_s=1.5, cpu_system_s=0.5, cpu_us_per_request=20.0,
                      connections_by_state_peak={"ESTAB": 30, "TIME-WAIT": 22}, samples=4, notes=["n"])
    result = full_result()
    with_cost = RunResult.from_dict(RunResult(**{**result.__dict__, "server_cost": cost}).to_dict())
    assert with_cost.server_cost == cost
    old = result.to_dict()
    del old["server_cost"]  # a record written before the field existed still loads
    assert RunResult.from_dict(old).server_cost is None


def test_a_samplers_server_cost_read_as_a_generator_cost_keeps_only_the_shared_figures():
    # A generator watched over SSH is sampled by the server's sampler; its connections and
    # TIME-WAIT are those of a port it does not serve, so they do not become the tool's.
    from toolbench.record.schema import GeneratorCost
    server = ServerCost(cpu_user_s=1.5, cpu_system_s=0.5, cpu_mean_pct=80.0, cpu_peak_pct=100.0,
                        cpu_us_per_request=20.0, rss_peak_bytes=4096, threads_peak=3, processes_peak=2,
                        open_files_peak=9, sockets_peak=4, connections_peak=7, time_wait_peak=3,
                        connections_by_state_peak={"ESTAB": 7}, wall_s=2.0, samples=4, interval_s=0.5,
                        monitor_cpu_s=0.01, notes=["n"])
    generator = GeneratorCost.from_shared(server)
    assert type(generator) is GeneratorCost
    assert (generator.cpu_user_s, generator.cpu_system_s, generator.cpu_mean_pct, generator.cpu_peak_pct) == (
        1.5, 0.5, 80.0, 100.0)
    assert (generator.cpu_us_per_request, generator.rss_peak_bytes, generator.threads_peak,
            generator.processes_peak, generator.open_files_peak, generator.sockets_peak) == (20.0, 4096, 3, 2, 9, 4)
    assert (generator.samples, generator.interval_s, generator.monitor_cpu_s, generator.notes) == (4, 0.5, 0.01, ["n"])
    assert generator.connections_peak is None and generator.time_wait_peak is None


def test_a_servers_workers_are_its_processes_up_to_the_cores():
    from toolbench.scenario.targets import GunicornOptions, NginxOptions, TargetSpec, UwsgiOptions
    assert TargetSpec(kind="nginx-static", nginx=NginxOptions()).workers(cores=2) == 2  # one per core
    assert TargetSpec(kind="nginx-static", nginx=NginxOptions(workers=1)).workers(cores=2) == 1
    assert TargetSpec(kind="gunicorn", gunicorn=GunicornOptions(workers=4)).workers(cores=8) == 4
    assert TargetSpec(kind="gunicorn", gunicorn=GunicornOptions(workers=4)).workers(cores=2) == 2
    both = TargetSpec(kind="nginx-uwsgi", nginx=NginxOptions(workers=1), uwsgi=UwsgiOptions(processes=2))
    assert both.workers(cores=8) == 3
    assert TargetSpec(kind="socket-gevent").workers(cores=8) == 1
    assert TargetSpec(kind="url", url="http://127.0.0.1:9").workers(cores=8) is None
