"""The engine running a workload (engine/workload_load.py) against a real server of the test's own
(workload_server.py): the order per user, a seeded mix's shares, data rows per user and per
iteration, recycled or stopping, an extracted token sent later, think time, each check kind
failing as `check`, stages in users and in rate, keep-alive off, and the figures per request
name adding up to the totals and to what the server got. Bounds, never timings."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from workload_server import Seen, site
from toolbench.engine import coordinator
from toolbench.engine.options import EngineOptions
from toolbench.engine.result import run_result
from toolbench.engine.workload import from_dict
from toolbench.record import invariants
from toolbench.record.schema import Measurement, RunResult, Status


def req(name: str, path: str, method: str = "GET", **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = dict(name=name, method=method, path=path, query={}, headers={}, body=None, weight=1.0,
                             extract=[], checks=None)
    d.update(kw)
    return d


LOGIN = req("login", "/login", "POST", headers={"Content-Type": "application/json"},
            body='{"user": "${user}", "password": "${password}"}',
            extract=[{"variable": "token", "json_path": "$.token"}], checks={"status": [200], "contains": "token"})
SEARCH = req("search", "/api/search", query={"q": "${term}"}, headers={"Authorization": "Bearer ${token}"},
             checks={"status": [200], "json_path": "$.count", "json_equals": 3, "max_bytes": 65536})
PAGE = req("page", "/page")


def rows(n: int) -> list[list[str]]:
    return [[f"u{i}", f"pw-u{i}", f"t {i}&"] for i in range(n)]


def workload(requests: list[dict[str, Any]], order: str = "sequence", **kw: Any) -> dict[str, Any]:
    return {"version": 1, "order": order, "requests": requests, "data": None, "think": None, "stages": [], **kw}


def data(n: int, per: str = "user", at_end: str = "recycle") -> dict[str, Any]:
    return {"columns": ["user", "password", "term"], "rows": rows(n), "per": per, "at_end": at_end}


def run(url: str, wl: dict[str, Any], **kw: Any) -> RunResult:
    opts = dict(connections=2, workers=1, workload=from_dict(json.loads(json.dumps(wl))))
    opts.update(kw)
    result = run_result(coordinator.run(EngineOptions(url=url + "/", **opts)))  # type: ignore[arg-type]
    invariants.check(result.measurement)
    return result


def user_of(seen: Seen) -> str:
    return str(json.loads(seen.body)["user"])


def assert_sums(m: Measurement) -> None:
    """Each name's counts add up to the totals, failure classes included."""
    for key in ("requests_total", "requests_ok", "requests_failed"):
        assert sum(getattr(f.counts, key) for f in m.by_request) == getattr(m.counts, key), key
    for key in ("check", "http_4xx", "http_5xx", "timeout", "connect"):
        assert sum(getattr(f.counts.failures, key) for f in m.by_request) == getattr(m.counts.failures, key), key
    assert sum(sum(f.counts.status_codes.values()) for f in m.by_request) == sum(m.counts.status_codes.values())


def test_sequence_per_user_data_per_user_and_the_extracted_token_reach_the_server() -> None:
    wl = workload([LOGIN, SEARCH, PAGE], data=data(5))
    with site() as (url, s):
        result = run(url, wl, connections=3, workers=2, duration_s=1.0)
        conns = s.by_conn()
    m = result.measurement
    assert result.outcome.status is Status.OK and m.counts.requests_failed == 0
    assert [f.name for f in m.by_request] == ["login", "search", "page"]
    users = set()
    for seen in [c for c in conns.values() if c]:  # the probe connections carried nothing
        paths = [x.path for x in seen]
        cycle = ["/login", "/api/search", "/page"] * (len(paths) // 3 + 1)
        assert paths == cycle[:len(paths)]  # each user its own connection, in order
        who = {user_of(x) for x in seen if x.path == "/login"}
        assert len(who) == 1  # per user: the same row every iteration
        users |= who
        for x in seen:
            if x.path == "/api/search":
                assert x.headers["authorization"] == f"Bearer tok-{next(iter(who))}"  # extracted, sent later
                assert x.query == {"q": f"t {next(iter(who))[1:]}&"}  # URL-encoded, decoded by the server
    assert users == {"u0", "u1", "u2"}
    assert_sums(m)
    got = {f.name: f.counts.requests_total for f in m.by_request}
    for name, path in (("login", "/login"), ("search", "/api/search"), ("page", "/page")):
        # The server saw every counted request, and at most one more per user (in flight at the stop).
        assert got[name] <= len(s.by_path(path)) <= got[name] + 3
        assert got[name] > 0


def test_a_seeded_mix_keeps_its_shares_and_repeats_with_the_same_seed() -> None:
    wl = workload([req("page", "/page", weight=1.0), req("items", "/api/items", "POST", body="{}", weight=3.0)],
                  order="mix", seed=7)
    with site() as (url, s):
        m = run(url, wl, connections=4, requests=3000).measurement
        shares = Counter(x.path for x in s.log)
    assert m.counts.requests_total == 3000 and sum(shares.values()) == 3000
    assert abs(shares["/api/items"] / 3000 - 0.75) < 0.04  # ~5 standard deviations
    assert {f.name: f.counts.requests_total for f in m.by_request} == {"page": shares["/page"],
                                                                       "items": shares["/api/items"]}
    orders = []
    for seed in (7, 7, 8):
        with site() as (url, s):
            run(url, {**wl, "seed": seed}, connections=1, requests=200)
            orders.append([x.path for x in s.log])
    assert orders[0] == orders[1] != orders[2]


def test_data_rows_per_iteration_recycle_in_order() -> None:
    wl = workload([LOGIN], data=data(3, per="iteration"))
    with site() as (url, s):
        run(url, wl, connections=1, requests=7)
        assert [user_of(x) for x in s.log] == ["u0", "u1", "u2", "u0", "u1", "u2", "u0"]


def test_data_rows_per_user_stop_leaves_the_users_past_the_last_row_idle() -> None:
    wl = workload([LOGIN], data=data(2, at_end="stop"))
    with site() as (url, s):
        m = run(url, wl, connections=4, duration_s=0.5).measurement
        assert {user_of(x) for x in s.log} == {"u0", "u1"}
        assert len({x.conn for x in s.log}) == 2
    assert m.counts.requests_ok == m.counts.requests_total > 0


def test_data_rows_per_iteration_stop_ends_the_run_when_they_are_out() -> None:
    wl = workload([LOGIN, SEARCH], data=data(5, per="iteration", at_end="stop"))
    with site() as (url, s):
        result = run(url, wl, connections=2, duration_s=20.0)
        logins = s.by_path("/login")
    m = result.measurement
    assert sorted(user_of(x) for x in logins) == ["u0", "u1", "u2", "u3", "u4"]
    assert m.counts.requests_total == 10 and m.counts.requests_failed == 0
    assert m.timing.duration_s is not None and m.timing.duration_s < 10  # stopped when the rows ran out


def test_think_time_bounds_the_request_count() -> None:
    wl = workload([PAGE])
    with site() as (url, _):
        free = run(url, wl, duration_s=1.0).measurement.counts.requests_total or 0
        constant = run(url, {**wl, "think": {"min_s": 0.05, "max_s": 0.05}}, duration_s=1.0).measurement
        uniform = run(url, {**wl, "think": {"min_s": 0.02, "max_s": 0.04}}, duration_s=1.0).measurement
    # 2 users, each pausing before every request after its first: at most 1 + 1.0 s / pause each.
    assert 0 < (constant.counts.requests_total or 0) <= 2 * (1 + 1.0 / 0.05)
    assert 0 < (uniform.counts.requests_total or 0) <= 2 * (1 + 1.0 / 0.02)
    assert free > 2 * (1 + 1.0 / 0.02)


def test_each_check_kind_fails_as_check_and_a_status_alone_as_its_class() -> None:
    wl = workload([
        req("status", "/status/404", checks={"status": [200]}),
        req("contains", "/page", checks={"contains": "nowhere"}),
        req("json", "/api/search", headers={"Authorization": "Bearer tok-x"},
            checks={"json_path": "$.count", "json_equals": 4}),
        req("size", "/page", checks={"max_bytes": 100}),
        req("extract", "/page", extract=[{"variable": "v", "regex": "id=([0-9]+)"}], checks={"status": [200]}),
        req("accepted", "/status/404", checks={"status": [404]}),
        req("plain4xx", "/status/404"),
        req("plain5xx", "/status/503", checks={"max_bytes": 1000}),
        req("fine", "/api/search", headers={"Authorization": "Bearer tok-x"},
            checks={"status": [200], "contains": "count", "json_path": "$.results[1]", "json_equals": "2",
                    "max_bytes": 1000}, query={"q": ""}),
    ])
    with site() as (url, _):
        m = run(url, wl, connections=1, requests=18).measurement
    by = {f.name: f.counts for f in m.by_request}
    for name in ("status", "contains", "json", "size", "extract"):
        assert (by[name].requests_total, by[name].failures.check, by[name].requests_ok) == (2, 2, 0), name
    assert (by["accepted"].requests_ok, by["accepted"].failures.http_4xx) == (2, 0)
    assert (by["plain4xx"].failures.http_4xx, by["plain4xx"].failures.check) == (2, 0)
    assert (by["plain5xx"].failures.http_5xx, by["plain5xx"].failures.check) == (2, 0)
    assert by["fine"].requests_ok == 2
    assert m.counts.failures.check == 10 and m.counts.requests_failed == 14 and m.counts.requests_ok == 4
    assert m.counts.status_codes == {200: 10, 404: 6, 503: 2}
    assert_sums(m)


def test_user_stages_ramp_to_the_peak_and_end_at_the_stages_total() -> None:
    stages = [{"duration_s": 0.6, "users": 4}, {"duration_s": 0.6, "users": 4}, {"duration_s": 0.4, "users": 0}]
    wl = workload([PAGE], stages=stages, think={"min_s": 0.01, "max_s": 0.01})
    with site() as (url, s):
        result = run(url, wl, connections=4, workers=2, duration_s=1.6)
        conns = {c: seen for c, seen in s.by_conn().items() if seen}
    m = result.measurement
    assert len(conns) == 4  # the peak: four users, each on its own connection
    starts = sorted(seen[0].at for seen in conns.values())
    assert starts[-1] - starts[0] > 0.15  # started over the ramp (0.15 s apart as asked), not at once
    assert m.timing.duration_s is not None and 1.55 <= m.timing.duration_s <= 2.6
    assert any("at most 4 users running at once" in n for n in m.notes)


def test_rate_stages_ramp_the_arrivals_and_end_at_the_stages_total() -> None:
    stages = [{"duration_s": 0.5, "rate_rps": 100.0}, {"duration_s": 0.5, "rate_rps": 100.0}]
    wl = workload([PAGE, req("items", "/api/items", "POST", body="{}")], order="mix", stages=stages)
    with site() as (url, s):
        result = run(url, wl, connections=8, workers=2, duration_s=1.0, rate_rps=100.0)
        seen = len(s.log)
    m = result.measurement
    # Due: 25 in the ramp and 50 in the hold; a few may be in flight or not yet due at the stop.
    assert 50 <= (m.counts.requests_total or 0) <= seen <= 76
    assert m.timing.duration_s is not None and 0.95 <= m.timing.duration_s <= 2.0
    assert_sums(m)


def test_a_head_request_is_whole_at_its_headers() -> None:
    with site() as (url, s):
        m = run(url, workload([req("head", "/page", "HEAD"), PAGE]), connections=1, requests=6,
                timeout_s=2.0).measurement
        assert [x.method for x in s.log] == ["HEAD", "GET"] * 3
    assert m.counts.requests_ok == 6 and m.counts.failures.timeout == 0


def test_keepalive_off_opens_a_connection_per_request() -> None:
    with site() as (url, s):
        m = run(url, workload([LOGIN, SEARCH], data=data(2)), requests=20, keepalive=False).measurement
        assert all(x.headers.get("connection") == "close" for x in s.log)
        assert len({x.conn for x in s.log}) == 20
        assert all(x.headers["authorization"].startswith("Bearer tok-u") for x in s.by_path("/api/search"))
    assert m.counts.requests_ok == 20 and m.counts.connections_opened == 20
