"""What the studies' articles need a scenario to say, read at the boundary: a target's own request
path, nginx to uWSGI over TCP, gevent's `Pool(N)`, the thread limit as a prerequisite; and the
three study scenarios saying the articles' conditions (docs/studies/*.md, "Conditions")."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO
from helpers.cli import cli
from helpers.scenarios import write
from helpers.tool_cells import argv
from toolbench.errors import ScenarioError, ScenarioErrors, TargetError
from toolbench.run import plan
from toolbench.scenario import read as scenario
from toolbench.scenario.targets import SocketOptions, UwsgiOptions
from toolbench.servers import nginx

STUDIES = REPO / "scenarios" / "studies"


def targets(tmp_path, entries: str) -> dict:
    return scenario.load(write(tmp_path, f"name: s\ntargets:\n{entries}matrix: {{tool: [ab]}}\n")).targets


def test_a_target_may_give_its_own_request_path_checked_as_request_path_is(tmp_path):
    found = targets(tmp_path, "  a: {server: flask-dev}\n  b: {server: flask-dev, path: /hello/café}\n"
                              "  c: {url: 'http://127.0.0.1:9', path: '/q?x=1'}\n")
    assert found["a"].path is None and found["b"].path == "/hello/caf%C3%A9" and found["c"].path == "/q?x=1"
    cells = {p.cell.target: p.cell for p in plan.expand(scenario.load(tmp_path / "s.yaml"))}
    assert [cells[t].at("http://127.0.0.1:80").url for t in "abc"] == [
        "http://127.0.0.1:80/", "http://127.0.0.1:80/hello/caf%C3%A9", "http://127.0.0.1:80/q?x=1"]


@pytest.mark.parametrize("entry, message", [
    ("{server: flask-dev, path: hello}", r"s.yaml:3: targets.x.path: expected a path starting with '/'"),
    ("{server: flask-dev, path: '/a#b'}", r"targets.x.path: a fragment"),
    ("{server: uwsgi, socket: tcp}", r"targets.x.socket: unknown key"),
    ("{server: nginx-uwsgi, socket: udp}", r"targets.x.socket: expected one of unix, tcp"),
    ("{server: socket-threads, pool: 10}", r"targets.x.pool: unknown key"),
    ("{server: socket-gevent, pool: 0}", r"targets.x.pool: expected a positive integer"),
    ("{server: socket-gevent, pool: 100001}", r"targets.x.pool: expected at most 100000"),
])
def test_a_wrong_option_names_its_line(tmp_path, entry, message):
    with pytest.raises((ScenarioError, ScenarioErrors), match=message):
        targets(tmp_path, f"  x: {entry}\n")


def test_the_defaults_stay_as_they_were(tmp_path):
    found = targets(tmp_path, "  u: {server: nginx-uwsgi}\n  g: {server: socket-gevent}\n"
                              "  t: {server: nginx-uwsgi, socket: tcp}\n  p: {server: socket-gevent, pool: 50}\n")
    assert found["u"].uwsgi.socket == "unix" and found["g"].socket.pool is None
    assert found["t"].uwsgi == UwsgiOptions(socket="tcp") and found["p"].socket == SocketOptions(pool=50)


def test_nginx_reaches_uwsgi_only_at_a_literal_address():
    server, _ = nginx.uwsgi_server(("127.0.0.1", 5000), None)
    assert 'uwsgi_pass "127.0.0.1:5000";' in server
    for bad in (("localhost", 5000), ("127.0.0.1; include /etc/x", 1), ("127.0.0.1", 70000)):
        with pytest.raises(TargetError):
            nginx.uwsgi_server(bad, None)


def test_the_thread_limit_is_a_prerequisite_a_scenario_may_ask_for_and_prereq_check_reads(tmp_path):
    path = write(tmp_path, "name: s\ntarget: {server: socket-threads}\nmatrix: {tool: [ab]}\nprerequisites:\n"
                           "  ulimit: {nproc: 64}\n  sysctl: {kernel.threads-max: 64}\n  required: false\n")
    assert scenario.load(path).prerequisites.sysctl == {"kernel.threads-max": "64"}
    done = cli("prereq", "check", str(path))
    threads_max = Path("/proc/sys/kernel/threads-max").read_text().split()[0]
    assert done.returncode == 0, done.stderr
    # More is better: the system's limit (far above 64) satisfies it, and is recorded as found.
    assert f"ok: kernel.threads-max: found {threads_max} wanted 64" in done.stdout
    assert re.search(r"ok: nproc: found (\d+|unlimited) wanted 64", done.stdout), done.stdout
    for other in ("kernel.pid_max", "kernel.threads-max.x"):
        refused = write(tmp_path, f"name: s\ntarget: {{server: nginx-static}}\nmatrix: {{tool: [ab]}}\n"
                                  f"prerequisites:\n  sysctl: {{{other}: 1}}\n")
        with pytest.raises(ScenarioErrors, match="not a setting a load test needs"):
            scenario.load(refused)


# The articles' conditions each study scenario now states (docs/studies/*.md, "Conditions").
def test_study_000_runs_hello2_and_reaches_uwsgi_over_tcp_as_the_article_did():
    s = scenario.load(STUDIES / "000-flask-tuning.yaml")
    t = s.targets
    assert t["flask-dev-hello2"].path == "/hello/libai"
    assert t["gunicorn-1-gevent-hello2"].path == t["gunicorn-4-gevent-hello2"].path == "/hello/2"
    assert t["gunicorn-4-gevent-hello2"].gunicorn.worker_class == "gevent"
    assert t["nginx-uwsgi"].uwsgi.socket == t["nginx-uwsgi-limit"].uwsgi.socket == "tcp"
    assert (t["uwsgi"].uwsgi.processes, t["uwsgi"].uwsgi.threads) == (4, 2)
    assert t["nginx-uwsgi-limit"].limit_req.rate == "50r/s" and t["nginx-uwsgi-limit"].limit_req.burst == 20
    assert s.matrix.concurrency == (100, 200, 1000) and s.stop.requests == 10000
    # siege is asked for 10,000 requests a cell: the article's own `-r 10` at c 1000.
    runs_each = {c: argv("siege", concurrency=c, stop=s.stop) for c in s.matrix.concurrency}
    assert {c: args[args.index("-r") + 1] for c, args in runs_each.items()} == {100: "100", 200: "50", 1000: "10"}
    assert s.prerequisites.ulimit == {"nofile": 65535}


def test_study_001_has_8_nginx_workers_a_2g_jmeter_and_locusts_default_user_on_4_processes():
    s = scenario.load(STUDIES / "001-tool-comparison.yaml")
    (target,) = s.targets.values()
    assert target.nginx.workers == 8
    assert s.tools["jmeter"].values == {"heap": "2g", "jit": "c1"}
    four = s.tools["locust-http-4p"]
    assert four.use == "locust" and four.values == {"user_class": "HttpUser", "processes": 4}
    assert "locust-http-4p" in s.matrix.tool
    assert s.prerequisites.sysctl == {"net.ipv4.tcp_tw_reuse": "1", "net.ipv4.tcp_timestamps": "1",
                                      "net.ipv4.tcp_tw_recycle": "1", "net.ipv4.tcp_fin_timeout": "30"}
    assert s.prerequisites.ulimit == {"nofile": 65536}


def test_study_003_has_the_gevent_pool_variant_and_asks_for_the_thread_limit():
    s = scenario.load(STUDIES / "003-socket-servers.yaml")
    assert s.targets["gevent-pool"].kind == "socket-gevent" and s.targets["gevent-pool"].socket.pool == 500
    assert s.targets["gevent"].socket.pool is None and s.targets["threads"].socket.backlog == 500
    assert s.prerequisites.ulimit == {"nofile": 65535, "nproc": 4096}
    assert s.prerequisites.sysctl["kernel.threads-max"] == "4096"
    assert s.matrix.concurrency == (500, 800, 1000, 1500) and s.stop.requests == 10000


@pytest.mark.parametrize("path", sorted(STUDIES.glob("*.yaml")), ids=lambda p: p.name)
def test_toolbench_validate_passes_each_study(path):
    done = cli("validate", str(path))
    assert done.returncode == 0, done.stderr
    assert f"{path}: ok," in done.stdout
