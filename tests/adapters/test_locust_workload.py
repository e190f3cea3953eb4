"""Locust with a workload (issue 32): the locustfile and its JSON built from hostile values, and
short real runs against a real HTTP server (tests/helpers/workload_server.py) that counts what
it served: per-name figures, data rows, the extracted token, checks, a mix and stages."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.workload_live import data_file, run, workload_cell
from helpers.workload_server import USERS, workload_server
from toolbench.adapters.locust import adapter as locust
from toolbench.adapters.locust import output as locust_out
from toolbench.adapters.locust import workload as locust_workload
from toolbench.contract.adapter import Found
from toolbench.contract.workload import Level, support_for
from toolbench.scenario.read import StopSpec
from toolbench.scenario.workload import Checks, DataFile, Extract, Stage, ThinkTime, Workload, WorkloadRequest

ADAPTER = locust.ADAPTER
HOSTILE = 'a"b\'c\\d\r\nX-Evil: 1 <x> ${__groovy(1)} """ \'\'\' \x00'



def build(cell) -> dict[str, str]:
    assert ADAPTER.supports(cell).ok, ADAPTER.supports(cell).reason
    return ADAPTER.build(cell, Path("/nonexistent"), Found("/usr/bin/python3", "2.47.0")).files


def login_search_page(data: DataFile, think: ThinkTime | None = None) -> Workload:
    return Workload("sequence", (
        WorkloadRequest("login", method="POST", path="/login", headers={"Content-Type": "application/json"},
                        body='{"user": "${user}", "password": "${password}"}',
                        extract=(Extract("token", json_path="$.token"),), checks=Checks(status=(200,))),
        WorkloadRequest("search", path="/api/search", query={"q": "${term}"},
                        headers={"Authorization": "Bearer ${token}"},
                        checks=Checks(status=(200,), json_path="$.count", json_equals=3, contains='"results"')),
        WorkloadRequest("page", path="/page", checks=Checks(max_bytes=100)),  # ~2 KB: always fails this check
    ), data=data, think=think)


# ---- the build ----

def test_hostile_values_reach_the_locustfile_only_as_json_data(tmp_path: Path):
    data = data_file(tmp_path, [{"v": HOSTILE}])
    wl = Workload("sequence", (WorkloadRequest("post-it", method="POST", path="/p/${v}", query={HOSTILE: "${v}"},
                                               headers={"X-V": HOSTILE + "${v}"}, body=HOSTILE,
                                               extract=(Extract("tok", regex=HOSTILE + "(.)"),),
                                               checks=Checks(contains=HOSTILE, json_path="$.a[0]",
                                                             json_equals=HOSTILE)),), data=data)
    files = build(workload_cell("locust", wl))
    assert files["locustfile.py"] == locust_workload.locustfile()  # the same file for every workload
    compile(files["locustfile.py"], "locustfile.py", "exec")
    params = json.loads(files["locust_workload.json"])
    (request,) = params["requests"]
    assert request["body"] == HOSTILE and request["headers"] == {"X-V": HOSTILE + "${v}"}
    assert request["query"] == {HOSTILE: "${v}"} and request["extract"][0]["regex"] == HOSTILE + "(.)"
    assert request["checks"]["contains"] == HOSTILE and request["checks"]["json_equals"] == HOSTILE
    assert files["workload_data.csv"] == Path(data.path).read_text()
    assert params["data"] == {"file": "workload_data.csv", "per": "user", "at_end": "recycle"}


def test_weights_become_whole_numbers_in_the_same_proportion():
    def weights(*given: float) -> list[int]:
        return locust_workload.whole_weights(tuple(WorkloadRequest(f"r{i}", weight=w) for i, w in enumerate(given)))
    assert weights(1, 3) == [1, 3]
    assert weights(0.5, 1.5, 2) == [1, 3, 4]
    assert weights(0.25, 0.75) == [1, 3]
    assert sum(weights(1, 0.001)) <= locust_workload.MAX_WEIGHT_SUM + 2


def test_stages_are_a_shape_and_replace_users_and_run_time():
    wl = Workload("mix", (WorkloadRequest("a"), WorkloadRequest("b")),
                  stages=(Stage(2.0, users=4), Stage(1.0, users=4), Stage(1.5, users=0)))
    cell = workload_cell("locust", wl, concurrency=4, stop=StopSpec(duration_s=4.5))
    inv = ADAPTER.build(cell, Path("/nonexistent"), Found("/usr/bin/python3", "2.47.0"))
    assert "-u" not in inv.argv and "-t" not in inv.argv
    assert json.loads(inv.files["locust_workload.json"])["stages"] == [
        {"duration_s": 2.0, "users": 4}, {"duration_s": 1.0, "users": 4}, {"duration_s": 1.5, "users": 0}]
    plain = workload_cell("locust", Workload("mix", wl.requests), concurrency=3)
    argv = ADAPTER.build(plain, Path("/nonexistent"), Found("/usr/bin/python3", "2.47.0")).argv
    assert argv[argv.index("-u") + 1] == "3" and argv[argv.index("-t") + 1] == "1s"


def test_what_locust_cannot_run_is_refused_with_the_reason(tmp_path: Path):
    wl = Workload("sequence", (WorkloadRequest("a"), WorkloadRequest("b")))
    rate = Workload("sequence", wl.requests, stages=(Stage(2.0, rate_rps=10),))
    assert "closed model" in ADAPTER.supports(workload_cell("locust", rate, rate_rps=10)).reason
    assert "duration" in ADAPTER.supports(workload_cell("locust", wl, stop=StopSpec(requests=100))).reason
    with_data = Workload("sequence", wl.requests, data=data_file(tmp_path, [{"x": "1"}]))
    assert "one process" in ADAPTER.supports(workload_cell("locust", with_data, options={"processes": 2})).reason
    support = support_for(ADAPTER.workload_features, "locust", login_search_page(data_file(tmp_path, [{"x": "1"}])))
    assert {s.level for s in support.values()} == {Level.HONOURED}
    assert set(support) == {"sequence", "data", "extract", "checks", "per_request"}


def test_a_failed_check_is_its_own_class_in_the_error_list():
    failures, codes = locust_out.classify_errors({
        "GET page: CatchResponseError('toolbench check failed: max_bytes')": 7,
        "GET search: HTTPError('401 Client Error: Unauthorized for url: /api/search')": 2})
    assert failures.check == 7 and failures.http_4xx == 2 and codes == {401: 2}


# ---- real runs ----

def test_a_sequence_with_data_token_and_checks_against_a_real_server(tmp_path: Path):
    rows = [{"user": u, "password": p, "term": f"term-{u}"} for u, p in USERS.items()]
    wl = login_search_page(data_file(tmp_path, rows), ThinkTime(0.01, 0.02))
    with workload_server() as (base, served):
        m, _ = run(ADAPTER, workload_cell("locust", wl, base_url=base, concurrency=2,
                                          stop=StopSpec(duration_s=2)), tmp_path)
    figures = {f.name: f for f in m.by_request}
    assert set(figures) == {"login", "search", "page"}
    for field in ("requests_total", "requests_ok", "requests_failed"):
        assert sum(getattr(f.counts, field) for f in figures.values()) == getattr(m.counts, field)
    # Every user logs in once per pass, with its own row (per user: two users, two of the three rows).
    assert len(served.logins) == 2 and set(served.logins) <= set(USERS)
    assert served.by_path("POST", "/login") == served.requests[("POST", "/login", 200)]  # the row's password fit
    # The token taken from the login reached the search: every search authorised, with the row's term.
    assert served.requests[("GET", "/api/search", 401)] == 0 and served.requests[("GET", "/api/search", 200)] > 0
    assert set(served.terms) == {f"term-{u}" for u in served.logins}
    assert figures["search"].counts.requests_failed == 0 and figures["login"].counts.requests_failed == 0
    # The page is 2 KB, over its check's 100 bytes: every one is a check failure, and only those.
    page = figures["page"].counts
    assert page.requests_total > 0 and page.requests_failed == page.requests_total
    assert page.failures.check == page.requests_total == m.counts.failures.check
    # What Locust counted is what the server answered, give or take what was in flight at the stop.
    for name, (method, path) in {"login": ("POST", "/login"), "search": ("GET", "/api/search"),
                                 "page": ("GET", "/page")}.items():
        assert 0 <= served.by_path(method, path) - figures[name].counts.requests_total <= 2


def test_a_mix_in_stages_against_a_real_server(tmp_path: Path):
    wl = Workload("mix", (WorkloadRequest("page", path="/page", weight=1),
                          WorkloadRequest("item", method="POST", path="/api/items", body='{"a": 1}', weight=3,
                                          checks=Checks(status=(201,)))),
                  think=ThinkTime(0.005, 0.005), stages=(Stage(1.0, users=3), Stage(1.0, users=3), Stage(1.0, users=0)))
    with workload_server() as (base, served):
        m, _ = run(ADAPTER, workload_cell("locust", wl, base_url=base, concurrency=3, stop=StopSpec(duration_s=3)),
                   tmp_path)
    figures = {f.name: f.counts for f in m.by_request}
    assert m.counts.requests_failed == 0 and figures["page"].requests_total + figures["item"].requests_total \
        == m.counts.requests_total
    assert served.requests[("POST", "/api/items", 201)] >= figures["item"].requests_total
    share = figures["item"].requests_total / m.counts.requests_total
    assert 0.6 < share < 0.9  # 3 in 4 asked; generous for a short run
