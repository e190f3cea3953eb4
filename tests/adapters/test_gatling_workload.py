"""Gatling with a workload (issue 32): the simulation's data built from hostile values (never in
its Java source, never read by Gatling as its Expression Language), the mix's percentages and the
injection profile, and one short real run through Gatling's own compiler and engine against a
real HTTP server (tests/helpers/workload_server.py) that counts what it served: hostile data values
and literals reach it byte for byte, the extracted token works, per-name figures match its counts,
failed checks are their own class, and closed stages start each user once."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.workload_live import data_file, found, run, workload_cell
from helpers.workload_server import USERS, workload_server
from toolbench.adapters.gatling import adapter as gatling
from toolbench.adapters.gatling import log as gatling_log
from toolbench.adapters.gatling import workload as gatling_workload
from toolbench.contract.adapter import Found
from toolbench.contract.workload import Level, support_for
from toolbench.scenario.read import StopSpec
from toolbench.scenario.workload import Checks, Extract, Stage, ThinkTime, Workload, WorkloadRequest

ADAPTER = gatling.ADAPTER
# Java string and comment ends, Gatling EL (`#{...}`), a workload-looking `${...}`, URL and JSON specials.
HOSTILE = 'a"b\\c */ #{user} ${term} %41+&=?é'
LITERAL = 'a"b\\c */ #{user} ${ %41+&=?é'  # the same without a workload variable


def built(cell):
    assert ADAPTER.supports(cell).ok, ADAPTER.supports(cell).reason
    return ADAPTER.build(cell, Path("/nonexistent"), Found("/opt/gatling/bin/gatling", "3.10.5"))


def login_search(**kw) -> Workload:
    return Workload("sequence", (
        WorkloadRequest("login", method="POST", path="/login", headers={"Content-Type": "application/json"},
                        body='{"user": "${user}", "password": "${password}"}',
                        extract=(Extract("token", json_path="$.token"),), checks=Checks(status=(200,), contains="token")),
        WorkloadRequest("search", path="/api/search", query={"q": "${term}|" + LITERAL},
                        headers={"Authorization": "Bearer ${token}"},
                        checks=Checks(status=(200,), json_path="$.count", json_equals=3, max_bytes=65536)),
        WorkloadRequest("page", path="/page", checks=Checks(max_bytes=100)),  # ~2 KB: fails its check
    ), **kw)


def test_values_are_data_beside_a_fixed_source_never_pasted_into_it(tmp_path: Path):
    hostile = Workload("sequence", (WorkloadRequest("a", method="POST", path="/p q/${v}", query={"k&": HOSTILE},
                                                    headers={"X-H": HOSTILE + "\r\nInjected: 1"}, body=HOSTILE),
                                    WorkloadRequest("b", checks=Checks(contains=HOSTILE, json_path="$.x[0]",
                                                                       json_equals=HOSTILE))),
                       data=data_file(tmp_path, [{"v": "x/y z"}]))
    inv = built(workload_cell("gatling", hostile))
    source = inv.files[gatling_workload.SOURCE]
    assert source == gatling_workload.simulation_source() and HOSTILE not in source
    assert inv.argv[1:4] == ["run", gatling_workload.SOURCE, gatling_workload.PARAMS]
    sent = json.loads(inv.files[gatling_workload.PARAMS])
    a, b = sent["requests"]
    # The path's literal pieces percent-encoded here, its variable by the simulation; a `${`
    # that is no workload variable stays text, and a header's literal loses its line break.
    assert a["url"] == [["text", "http://127.0.0.1:8080"], ["text", "/p%20q/"], ["path", "v"],
                        ["text", "?"], ["text", "k%26"], ["text", "="],
                        ["text", "a%22b%5Cc+%2A%2F+%23%7Buser%7D+"], ["query", "term"], ["text", "+%2541%2B%26%3D%3F%C3%A9"]]
    assert a["body"] == [["text", 'a"b\\c */ #{user} '], ["body", "term"], ["text", " %41+&=?é"]]
    assert ["Content-Type", [["text", "application/octet-stream"]]] in a["headers"]
    header = dict((k, v) for k, v in a["headers"])["X-H"]
    literal = "".join(p[1] for p in header if p[0] == "text")
    assert literal.endswith("éInjected: 1") and "\r" not in literal and "\n" not in literal
    assert b["checks"]["contains"] == HOSTILE and b["checks"]["json_equals"] == HOSTILE
    assert sent["data"]["rows"] == [{"v": "x/y z"}] and sent["data"]["at_end"] == "recycle"


def test_a_mix_is_percentages_with_the_last_request_taking_the_rest():
    three = tuple(WorkloadRequest(n, weight=1) for n in "abc")
    assert gatling_workload.percents(three) == [33.333333, 33.333333]
    assert sum(gatling_workload.percents(three)) < 100
    wl = Workload("mix", (WorkloadRequest("a", weight=1), WorkloadRequest("b", weight=3)))
    assert json.loads(built(workload_cell("gatling", wl)).files[gatling_workload.PARAMS])["percents"] == [25.0]


def test_stages_are_the_injection_profile_closed_in_users_open_in_users_a_second():
    closed = login_search(stages=(Stage(1, users=4), Stage(2, users=4), Stage(0.5, users=0)))
    sent = json.loads(built(workload_cell("gatling", closed, concurrency=4, stop=StopSpec(duration_s=3.5)))
                      .files[gatling_workload.PARAMS])
    assert sent["model"] == "closed" and sent["duration_ms"] == 3500
    assert sent["profile"] == [{"from": 0, "to": 4, "duration_ms": 1000}, {"from": 4, "to": 4, "duration_ms": 2000},
                               {"from": 4, "to": 0, "duration_ms": 500}]
    opened = login_search(stages=(Stage(1, rate_rps=30), Stage(1, rate_rps=30)))
    sent = json.loads(built(workload_cell("gatling", opened, rate_rps=30, stop=StopSpec(duration_s=2)))
                      .files[gatling_workload.PARAMS])
    # Three requests an iteration: 10 new users a second send 30 requests a second.
    assert sent["model"] == "open" and sent["profile"][0] == {"from": 0.0, "to": 10.0, "duration_ms": 1000}
    plain = json.loads(built(workload_cell("gatling", login_search(), concurrency=3)).files[gatling_workload.PARAMS])
    assert plain["profile"] == [{"from": 3, "to": 3, "duration_ms": 1000}]


def test_what_gatling_cannot_run_is_refused_and_each_feature_declared():
    counted = workload_cell("gatling", login_search(), stop=StopSpec(requests=100))
    assert "runs for a duration" in ADAPTER.supports(counted).reason
    odd = Workload("sequence", (WorkloadRequest("a", method="PROPFIND"),))
    assert "not PROPFIND" in ADAPTER.supports(workload_cell("gatling", odd)).reason
    support = support_for(ADAPTER.workload_features, "gatling", login_search(stages=(Stage(1, users=2),)))
    assert {f: s.level for f, s in support.items()} == {
        "sequence": Level.HONOURED, "extract": Level.APPROXIMATED, "checks": Level.HONOURED,
        "stages": Level.APPROXIMATED, "per_request": Level.HONOURED}


def test_a_check_message_is_the_check_class_and_a_status_outside_checks_its_own():
    by_class = gatling_log.classes_of({"toolbench check status: status.find.in(200), but actually found 401": 2,
                                       "status.find.lessThan(400), but actually 404 is not less than 400": 3})
    assert by_class["check"] == 2 and by_class["http_4xx"] == 3
    assert gatling_log.classes_of({"status.find.lessThan(400), but actually 500 is not less than 400": 1})["check"] is None


def test_a_workload_run_through_gatling_against_a_real_server(tmp_path: Path):
    found(ADAPTER)
    rows = [{"user": "alice", "password": USERS["alice"], "term": HOSTILE},
            {"user": "bob", "password": USERS["bob"], "term": "plain"}]
    wl = login_search(data=data_file(tmp_path, rows), think=ThinkTime(0.01, 0.03),
                      stages=(Stage(0.5, users=2), Stage(1.0, users=2), Stage(0.5, users=0)))
    cell = workload_cell("gatling", wl, concurrency=2, stop=StopSpec(duration_s=2.0))
    with workload_server() as (base, served):
        m, raw = run(ADAPTER, cell.at(base), tmp_path)
    # Data values and literals reach the server byte for byte (through JSON, the simulation and Gatling).
    assert set(served.terms) == {f"{HOSTILE}|{LITERAL}", f"plain|{LITERAL}"}
    assert set(served.logins) == {"alice", "bob"}  # one row per user, each user logged in with its own
    # The extracted token authorised every search; every /page failed its size check, and only that.
    names = {f.name: f for f in m.by_request}
    assert set(names) == {"login", "search", "page"}
    for name, path in (("login", "/login"), ("search", "/api/search"), ("page", "/page")):
        method = "POST" if name == "login" else "GET"
        assert names[name].counts.requests_total == served.by_path(method, path) > 0
    assert names["search"].counts.requests_ok == served.requests[("GET", "/api/search", 200)]
    assert names["page"].counts.requests_failed == names["page"].counts.failures.check == served.by_path("GET", "/page")
    assert m.counts.failures.check == names["page"].counts.requests_failed and m.counts.requests_ok == (
        names["login"].counts.requests_total + names["search"].counts.requests_total)
    # Closed stages: each of the two users started once and looped (no user started to leave at once).
    log = (tmp_path / "simulation.log").read_text()
    assert log.count("\tSTART\t") == 2 and log.count("\tEND\t") == 2
