"""Hostile values through the real tools: nothing a scenario says is executed (a marker file
is never created), bodies and paths arrive as given, and a Locust budget that can never be
served stops with a reason. The servers are a capture server and nginx, both on loopback."""
import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, need
from helpers.engine_servers import OK, responder, serve
from toolbench.adapters.jmeter import adapter as jmeter
from toolbench.adapters.locust import adapter as locust
from toolbench.contract import registry
from toolbench.contract.adapter import Found, RawOutput
from toolbench.contract.cell import Cell
from toolbench.contract.host import free_port
from toolbench.hosts.local import LocalHost
from toolbench.record import store
from toolbench.record.schema import Status
from toolbench.run import runner
from toolbench.scenario import httpvalues
from toolbench.scenario import read as scenario
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

pytestmark = pytest.mark.integration

JMETER_INSTALLED = bool(list((REPO / ".tools").glob("jmeter-5.*/bin/jmeter")))


def cell(tool: str, url: str, request: RequestSpec, requests: int = 2, variant: str | None = None,
         concurrency: int = 1, timeout_s: float = 60, keepalive: bool = True) -> Cell:
    return Cell(scenario="hostile", tool=tool, concurrency=concurrency, keepalive=keepalive, repetition=1,
                request=request, stop=StopSpec(requests=requests), timeout_s=timeout_s, variant=variant,
                url=url.rstrip("/") + request.path)


def run_tool(c: Cell, workdir: Path, timeout_s: float = 120) -> RawOutput:
    """What the runner does for one cell, without the runner: build, write, run, collect."""
    adapter = registry.get(c.tool)
    workdir.mkdir(parents=True, exist_ok=True)
    found = adapter.detect(LocalHost())
    assert isinstance(found, Found), found
    invocation = adapter.build(c, workdir, found)
    for name, content in invocation.files.items():
        (workdir / name).write_text(content)
    done = subprocess.run(invocation.argv, cwd=workdir, capture_output=True, text=True, timeout=timeout_s,
                          env={**os.environ, **invocation.env})
    files = {role: workdir / name for role, name in invocation.outputs.items() if (workdir / name).exists()}
    return RawOutput(stdout=done.stdout, stderr=done.stderr, exit_code=done.returncode, files=files,
                     source=str(workdir))


def body_of(raw: bytes) -> bytes:
    return raw.split(b"\r\n\r\n", 1)[1]


def header_of(raw: bytes, name: bytes) -> bytes | None:
    head = raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]
    return next((line.split(b":", 1)[1].strip() for line in head if line.split(b":")[0].lower() == name.lower()),
                None)


# ---- code execution ----

def test_locust_runs_hostile_names_and_values_as_data(tmp_path):
    marker = tmp_path / "MARKER"
    code = f"open({str(marker)!r}, 'w')"
    hostile = {"variant": f"x\n{code}\n#", "path": f"/a'+{code}.name+'", "value": f"'''+{code}.name+'''",
               "body": '"""+' + code + '.name+"""\n\'}\\'}
    request = RequestSpec(method="POST", path=httpvalues.request_path(hostile["path"]),
                          headers={"X-Evil": hostile["value"]}, body=hostile["body"], content_type="text/plain")
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        c = cell("locust", url, request, requests=3, variant=hostile["variant"])
        raw = run_tool(c, tmp_path / "run")
    compile((tmp_path / "run" / "locustfile.py").read_text(), "locustfile.py", "exec")
    assert not marker.exists()
    assert locust.ADAPTER.parse(raw).counts.requests_total == 3
    assert len(stats.requests) == 3
    sent = stats.requests[0]
    assert sent.startswith(b"POST " + request.path.encode() + b" HTTP/1.1\r\n") and b".name+'" in sent
    assert header_of(sent, b"X-Evil") == hostile["value"].encode()
    assert body_of(sent) == hostile["body"].encode()


@pytest.mark.skipif(not JMETER_INSTALLED, reason="JMeter 5.x is not in .tools/ (run `toolbench install jmeter`)")
def test_jmeter_sends_functions_as_text_and_runs_none(tmp_path):
    """`${__groovy(...)}` in the path, a header and the body: sent literally, never run."""
    marker = tmp_path / "MARKER"
    evil = "${__groovy(new File('%s').createNewFile())}" % marker
    request = RequestSpec(method="POST", path=httpvalues.request_path("/p/" + evil),
                          headers={"X-Evil": evil + " \\,$"}, body=evil + "\r\n\\${x}\n")
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        raw = run_tool(cell("jmeter", url, request), tmp_path / "run")
    assert not marker.exists()
    assert jmeter.ADAPTER.parse(raw).counts.requests_ok == 2
    sent = stats.requests[0]
    assert sent.startswith(b"POST " + request.path.encode() + b" HTTP/1.1\r\n") and b"%7B__groovy" in sent
    assert header_of(sent, b"X-Evil") == (evil + " \\,$").encode()
    assert body_of(sent) == request.body.encode()


@pytest.mark.skipif(not JMETER_INSTALLED, reason="JMeter 5.x is not in .tools/ (run `toolbench install jmeter`)")
def test_jmeter_runs_no_function_in_a_url_that_skipped_validation(tmp_path):
    """validate refuses such a host (test_hostile_scenario); the plan makes it literal anyway."""
    marker = tmp_path / "MARKER"
    evil = "${__groovy(new File('%s').createNewFile())}" % marker
    c = dataclasses.replace(cell("jmeter", "http://127.0.0.1:1", RequestSpec()),
                            url=f"http://{evil}:{free_port()}/{evil}")
    raw = run_tool(c, tmp_path / "run")
    assert not marker.exists()
    assert jmeter.ADAPTER.parse(raw).counts.requests_ok == 0  # the host, taken literally, does not resolve


# ---- bodies ----

# Short ids: pytest puts the test's id into PYTEST_CURRENT_TEST, and a 200 KiB one is over the
# kernel's limit for one environment string (128 KiB), so no tool could be started (E2BIG).
@pytest.mark.parametrize("body", ["</etc/hostname", "x" * (200 * 1024) + "\r\nend"],
                         ids=["file-reference", "200KiB"])
def test_siege_and_ab_send_a_body_as_given(tmp_path, body):
    """A body starting with '<' is not a file to siege, and one over 128 KiB does not
    overflow argv (E2BIG): both come from a file toolbench writes."""
    request = RequestSpec(method="POST", body=body, content_type="text/plain")
    for tool in ("siege", "ab"):
        need(tool)
        # one request per connection: ab's HTTP/1.0 waits for the close
        with serve(responder(lambda raw, stats: OK, keepalive=False)) as (url, stats):
            raw = run_tool(cell(tool, url, request, keepalive=False), tmp_path / tool)
        assert raw.exit_code == 0, raw.stderr
        assert [body_of(r) for r in stats.requests] == [body.encode()] * 2, tool


def test_siege_refuses_a_body_it_would_trim(tmp_path):
    c = cell("siege", "http://127.0.0.1:1", RequestSpec(method="POST", body=" padded\n"))
    support = registry.get("siege").supports(c)
    assert not support.ok and "trims" in support.reason


# ---- paths ----

NON_ASCII = """\
name: non-ascii.query
target: {server: nginx-static}
request: {path: "/?q=caf\u00e9 au lait"}
matrix:
  tool: [ab, engine, locust, siege]
  concurrency: [1]
stop: {requests: 5}
probe: {baseline: 2}
tools:
  engine: {workers: 1}
"""


def test_a_non_ascii_request_target_is_answered_by_nginx_for_every_tool_and_the_probe(tmp_path):
    need("nginx")
    (tmp_path / "s.yaml").write_text(NON_ASCII)
    summary = runner.run(scenario.load(tmp_path / "s.yaml"), tmp_path / "reports")
    results = store.RunDir.open(summary.run_dir).results()
    assert {r.identity.tool for r in results} == {"ab", "engine", "locust", "siege"}
    for r in results:
        # 200 from nginx: a well-formed request for / (a malformed one would get a 400)
        assert r.identity.url.endswith("/?q=caf%C3%A9%20au%20lait")
        assert r.outcome.status is Status.OK and r.measurement.counts.requests_ok == 5, (r.identity.tool, r.outcome)
        assert r.probe is not None and len(r.probe.baseline_ms) == 2
    # Every file the run made is inside its run folder.
    made = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "s.yaml"]
    assert made and all(p.resolve().is_relative_to(summary.run_dir.resolve()) for p in made)


@pytest.mark.parametrize("tool", ["ab", "engine", "siege", "locust"])
def test_a_non_ascii_path_is_sent_as_utf8_percent_escapes(tmp_path, tool):
    if tool in ("ab", "siege"):
        need(tool)
    request = RequestSpec(path=httpvalues.request_path("/caf\u00e9/\u20ac"))
    with serve(responder(lambda raw, stats: OK, keepalive=False)) as (url, stats):
        raw = run_tool(cell(tool, url, request, keepalive=False), tmp_path / tool)
    assert raw.exit_code == 0, raw.stderr
    assert stats.requests and all(r.startswith(b"GET /caf%C3%A9/%E2%82%AC HTTP/1.") for r in stats.requests)


# ---- a Locust budget that cannot be served ----

def test_a_locust_budget_against_a_closed_port_stops_and_says_why(tmp_path):
    c = cell("locust", f"http://127.0.0.1:{free_port()}", RequestSpec(), requests=10_000_000, concurrency=2,
             timeout_s=200)  # without the stop: Locust would run 190 s and the note would be missing
    raw = run_tool(c, tmp_path / "run", timeout_s=260)
    measurement = locust.ADAPTER.parse(raw)
    assert 0 < measurement.counts.requests_total < 10_000_000
    assert measurement.counts.requests_ok == 0
    note = f"no request succeeded in the first {locust.STALL_S:g} s: stopped before the budget of 10000000"
    assert any(n.startswith(note) for n in measurement.notes), measurement.notes
