"""httperf with a workload (issue 32): its session file (--wsesslog) built from hostile values,
the session rate and count, what it cannot send as given refused with the reason, and one short
real run against a real server (tests/helpers/workload_server.py): every session logs in with its
data row through a body full of httperf's own escapes, and the requests add up."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.workload_live import data_file, found, run, workload_cell
from helpers.workload_server import USERS, workload_server
from toolbench.adapters import httperf, httperf_workload
from toolbench.contract.adapter import Found
from toolbench.contract.workload import Level, support_for
from toolbench.run.workload_plan import of_adapter
from toolbench.scenario.read import StopSpec
from toolbench.scenario.workload import Checks, ThinkTime, Workload, WorkloadRequest

ADAPTER = httperf.ADAPTER
HOSTILE = 'q"uote\' back\\slash \\n two-chars\nline\rcr\ttab é # method=GET contents="x"'


def built(wl: Workload, **kw):
    cell = workload_cell("httperf", wl, **({"rate_rps": 30.0} | kw))
    assert ADAPTER.supports(cell).ok, ADAPTER.supports(cell).reason
    return ADAPTER.build(cell, Path("/nonexistent"), Found("/usr/bin/httperf", "0.9.0"))


def test_the_session_file_holds_a_session_per_row_and_bodies_escaped_as_httperf_reads_them(tmp_path: Path):
    rows = [{"who": "a b/c"}, {"who": "d"}]
    wl = Workload("sequence", (WorkloadRequest("get", path="/p/${who}", query={"q": "${who}&"}),
                               WorkloadRequest("put", method="PUT", path="/x", body=HOSTILE + " ${who}")),
                  data=data_file(tmp_path, rows), think=ThinkTime(0.02, 0.06))
    inv = built(wl, stop=StopSpec(duration_s=2))
    sessions = inv.files[httperf_workload.SESSIONS_FILE].split("\n\n")
    assert sessions[0].split("\n")[1:] == [
        "/p/a%20b%2Fc?q=a+b%2Fc%26",
        '/x method=PUT contents="q\\"uote\' back\\\\slash \\\\n two-chars\\nline\rcr\ttab é # method=GET '
        'contents=\\"x\\" a b/c"']
    assert sessions[1].split("\n")[0] == "/p/d?q=d%26" and len(sessions) == 2
    # 30 requests a second, two a session: 15 sessions a second for 2 s; think time its mean.
    assert inv.argv[inv.argv.index("--rate") + 1] == "15" and "--wsesslog=30,0.04,sessions.txt" in inv.argv


def test_at_end_stop_starts_no_more_sessions_than_rows_and_headers_are_one_set(tmp_path: Path):
    data = data_file(tmp_path, [{"who": "a"}, {"who": "b"}], at_end="stop")
    wl = Workload("sequence", (WorkloadRequest("a", path="/${who}", headers={"X-T": "1"}),
                               WorkloadRequest("b", headers={"X-T": "1"})), data=data)
    argv = built(wl).argv
    assert "--wsesslog=2,0,sessions.txt" in argv and argv[argv.index("--add-header") + 1] == "X-T: 1\\n"


def test_what_httperf_cannot_send_as_given_is_refused_and_each_feature_declared():
    def reason(wl: Workload, **kw) -> str:
        return ADAPTER.supports(workload_cell("httperf", wl, **({"rate_rps": 10.0} | kw))).reason or ""
    two = (WorkloadRequest("a"), WorkloadRequest("b"))
    assert "closed model" in reason(Workload("sequence", two), rate_rps=None)
    assert "persistent connection" in reason(Workload("sequence", two), keepalive=False)
    differ = Workload("sequence", (WorkloadRequest("a", headers={"X": "1"}), WorkloadRequest("b")))
    assert "one set of headers" in reason(differ)
    token = Workload("sequence", (WorkloadRequest("a", headers={"A": "Bearer ${t}"}),))
    assert "${variable}" in reason(token)
    assert "NUL" in reason(Workload("sequence", (WorkloadRequest("a", method="POST", body="a\0b"),)))
    checked = Workload("sequence", two[:1] + (WorkloadRequest("b", checks=Checks(status=(200,))),),
                       think=ThinkTime(0.1, 0.3))
    support = support_for(ADAPTER.workload_features, "httperf", checked)
    assert support["sequence"].level is Level.HONOURED and support["think"].level is Level.APPROXIMATED
    assert support["checks"].level is Level.UNSUPPORTED and support["per_request"].level is Level.UNSUPPORTED
    assert "figures per request" in " ".join(of_adapter(ADAPTER, Workload("sequence", two)).notes())


def test_a_workload_run_through_httperf_against_a_real_server(tmp_path: Path):
    found(ADAPTER)
    rows = [{"user": u, "password": USERS[u]} for u in ("alice", "bob")]
    # The JSON text of HOSTILE holds \", \\ and \n: httperf's own escapes, which must reach the server as written.
    body = '{"user": "${user}", "password": "${password}", "note": ' + json.dumps(HOSTILE) + "}"
    wl = Workload("sequence", (WorkloadRequest("login", method="POST", path="/login", body=body),
                               WorkloadRequest("page", path="/page"),
                               WorkloadRequest("item", method="POST", path="/api/items", body="{}")),
                  data=data_file(tmp_path, rows), think=ThinkTime(0.01, 0.03))
    with workload_server() as (base, served):
        m, _ = run(ADAPTER, workload_cell("httperf", wl, base_url=base, rate_rps=30.0, stop=StopSpec(duration_s=1)),
                   tmp_path)
    # 10 sessions (30 requests a second, 3 a session, for 1 s), taking the two rows in turn.
    assert served.logins == {"alice": 5, "bob": 5} and served.requests[("POST", "/login", 401)] == 0
    assert served.by_path("GET", "/page") == served.by_path("POST", "/api/items") == 10
    assert m.counts.requests_total == m.counts.requests_ok == 30 and m.by_request == []
