"""JMeter with a workload (issue 32): the test plan built from hostile values (XML-escaped, `${`
literal, a workload's own `${name}` a JMeter variable), its structure per feature, and one short
real run against a real HTTP server (tests/helpers/workload_server.py) that counts what it served:
per-name figures from the JTL's labels, data rows, the extracted token, and failed checks."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from helpers.workload_live import data_file, run, workload_cell
from helpers.workload_server import USERS, workload_server
from toolbench.adapters.jmeter import adapter as jmeter
from toolbench.adapters.jmeter import workload_plan
from toolbench.contract.adapter import Found
from toolbench.contract.workload import Level, support_for
from toolbench.scenario.read import StopSpec
from toolbench.scenario.workload import Checks, Extract, Stage, ThinkTime, Workload, WorkloadRequest

ADAPTER = jmeter.ADAPTER
HOSTILE = 'a"b\'c\\d\r\n<x>&amp; ${__groovy(System.exit(1))} ${__char(36)} ]]>'
LITERAL = HOSTILE.replace("\\", "\\\\").replace("$", "${__char(36)}")  # as JMeter reads it back: HOSTILE



def plan(cell) -> ET.Element:
    assert ADAPTER.supports(cell).ok, ADAPTER.supports(cell).reason
    files = ADAPTER.build(cell, Path("/nonexistent"), Found("/opt/jmeter/bin/jmeter", "5.6.3")).files
    return ET.fromstring(files["plan.jmx"].encode())


def prop(element: ET.Element, name: str) -> str:
    found = element.find(f"*[@name='{name}']")
    assert found is not None, name
    return found.text or ""


def test_hostile_values_are_literal_and_workload_variables_stay_variables(tmp_path: Path):
    wl = Workload("sequence", (WorkloadRequest(
        "post", method="POST", path="/p/${v}", query={"q": "${v}", "k": HOSTILE},
        headers={"X-A": HOSTILE, "X-B": "pre ${v} " + HOSTILE}, body=HOSTILE + "${v}",
        extract=(Extract("tok", regex=HOSTILE + "(.)"),),
        checks=Checks(contains=HOSTILE, json_path="$.a[0]", json_equals=HOSTILE)),),
        data=data_file(tmp_path, [{"v": "x"}]))
    root = plan(workload_cell("jmeter", wl))
    (sampler,) = root.iter("HTTPSamplerProxy")
    assert sampler.get("testname") == "post"
    path = prop(sampler, "HTTPSampler.path")
    assert path.startswith("/p/${__urlencode(${v})}?q=${__urlencode(${v})}&k=") and "${__groovy" not in path
    assert "%24%7B__groovy" in path  # the literal query value percent-encoded whole
    headers = {prop(h, "Header.name"): prop(h, "Header.value") for h in root.iter("elementProp")
               if h.get("elementType") == "Header"}
    assert headers["X-A"] == LITERAL  # no ${ of its own: JMeter evaluates nothing in it
    assert headers["X-B"] == "pre ${v} " + LITERAL.replace(",", "\\,")
    (body,) = [e for e in root.iter("elementProp") if e.get("elementType") == "HTTPArgument"]
    assert prop(body, "Argument.value") == LITERAL + "${v}"
    strings = [s.text for a in root.iter("ResponseAssertion") for s in a.iter("stringProp") if s.get("name") == "0"]
    assert LITERAL in strings and LITERAL + "(.)" in strings
    assert prop(next(root.iter("RegexExtractor")), "RegexExtractor.regex") == LITERAL + "(.)"


def test_data_per_user_is_read_once_per_thread_and_per_iteration_in_the_loop(tmp_path: Path):
    requests = (WorkloadRequest("a", path="/${x}"), WorkloadRequest("b"))
    for per, under in (("user", "ThreadGroup"), ("iteration", "LoopController")):
        data = data_file(tmp_path, [{"x": "1"}], per)
        root = plan(workload_cell("jmeter", Workload("sequence", requests, data=data)))
        parents = {child: parent for parent in root.iter() for child in parent}
        (data,) = root.iter("CSVDataSet")
        tree = parents[data]  # the hashTree of the element it is configured under
        owner = list(parents[tree])[list(parents[tree]).index(tree) - 1]
        assert owner.tag == under, per
        assert prop(data, "shareMode") == "shareMode.all" and prop(data, "recycle") == "true"
    group = next(root.iter("ThreadGroup"))
    assert prop(group.find("elementProp"), "LoopController.loops") == "1"  # once per user, around the loop


def test_a_mix_repeats_each_sampler_by_its_whole_weight_under_a_random_controller():
    wl = Workload("mix", (WorkloadRequest("a", weight=0.5), WorkloadRequest("b", weight=1.5)),
                  think=ThinkTime(0.02, 0.08))
    root = plan(workload_cell("jmeter", wl))
    labels = [s.get("testname") for s in root.iter("HTTPSamplerProxy")]
    assert sorted(labels) == ["a", "b", "b", "b"] and len(list(root.iter("RandomController"))) == 1
    timer = next(root.iter("UniformRandomTimer"))
    assert (prop(timer, "ConstantTimer.delay"), prop(timer, "RandomTimer.range")) == ("20", "60")
    many = workload_plan.copies(tuple(WorkloadRequest(f"r{i}", weight=w) for i, w in enumerate((1, 2, 1000))))
    assert many[2] >= 98 * many[0] and sum(many) <= workload_plan.MAX_COPIES + 2  # each at least once


def test_what_jmeter_cannot_express_is_refused_or_declared_with_the_reason():
    requests = (WorkloadRequest("page"), WorkloadRequest("page-2"))
    assert "sub-result" in ADAPTER.supports(workload_cell("jmeter", Workload("sequence", requests))).reason
    staged = Workload("sequence", (WorkloadRequest("a"), WorkloadRequest("b")), stages=(Stage(2.0, users=2),))
    assert ADAPTER.supports(workload_cell("jmeter", staged)).ok  # a ramp up to the peak, then held: approximated
    support = support_for(ADAPTER.workload_features, "jmeter", staged)
    assert support["stages"].level is Level.APPROXIMATED and "ramp down is not run" in support["stages"].how
    assert support["per_request"].level is Level.HONOURED
    bad = Workload("sequence", (WorkloadRequest("a", headers={"X": "a\x01b"}),))
    assert "control characters" in ADAPTER.supports(workload_cell("jmeter", bad)).reason
    budget = workload_cell("jmeter", Workload("sequence", requests[:1]), stop=StopSpec(requests=10))
    assert "duration" in ADAPTER.supports(budget).reason


def test_a_workload_run_against_a_real_server(tmp_path: Path):
    rows = [{"user": u, "password": p, "term": f"term-{u}"} for u, p in USERS.items()]
    wl = Workload("sequence", (
        WorkloadRequest("login", method="POST", path="/login", headers={"Content-Type": "application/json"},
                        body='{"user": "${user}", "password": "${password}"}',
                        extract=(Extract("token", json_path="$.token"),), checks=Checks(status=(200,))),
        WorkloadRequest("search", path="/api/search", query={"q": "${term}"},
                        headers={"Authorization": "Bearer ${token}"},
                        checks=Checks(status=(200,), json_path="$.count", json_equals=3, contains='"results"')),
        WorkloadRequest("wrong-count", path="/api/search", headers={"Authorization": "Bearer ${token}"},
                        checks=Checks(json_path="$.count", json_equals=4)),
        WorkloadRequest("page", path="/page", checks=Checks(max_bytes=100)),
        WorkloadRequest("item", method="POST", path="/api/items", body='{"by": "${user}"}',
                        extract=(Extract("id", regex='"id": ([0-9]+)'),), checks=Checks(status=(201,))),
    ), data=data_file(tmp_path, rows), think=ThinkTime(0.005, 0.01))
    with workload_server() as (base, served):
        m, _ = run(ADAPTER, workload_cell("jmeter", wl, base_url=base, concurrency=2, stop=StopSpec(duration_s=3)),
                   tmp_path)
    figures = {f.name: f.counts for f in m.by_request}
    assert set(figures) == {"login", "search", "wrong-count", "page", "item"}
    for field in ("requests_total", "requests_ok", "requests_failed"):
        assert sum(getattr(f, field) for f in figures.values()) == getattr(m.counts, field)
    # Each of the two users took its own row once; its password let it in; its term and token reached the search.
    assert len(served.logins) == 2 and served.requests[("POST", "/login", 401)] == 0
    assert set(served.terms) - {""} == {f"term-{u}" for u in served.logins}
    assert served.requests[("GET", "/api/search", 401)] == 0
    assert figures["login"].requests_failed == figures["search"].requests_failed == figures["item"].requests_failed == 0
    # The failed JSON and size checks are the `check` class, per name and in the totals.
    for name in ("wrong-count", "page"):
        assert figures[name].requests_total > 0 and figures[name].failures.check == figures[name].requests_total
    assert m.counts.failures.check == figures["wrong-count"].requests_total + figures["page"].requests_total
    assert figures["item"].status_codes == {201: figures["item"].requests_total}
    # What the JTL holds is what the server answered, give or take what was in flight at the stop.
    for name, (method, path) in {"login": ("POST", "/login"), "page": ("GET", "/page"),
                                 "item": ("POST", "/api/items")}.items():
        assert 0 <= served.by_path(method, path) - figures[name].requests_total <= 2
