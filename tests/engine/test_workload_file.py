"""A workload's file, strictly read (engine/workload.py); its request bytes, checks and stage times
(workload_http.py, workload_stages.py); and the engine adapter's side: what it declares, the file
it writes from a scenario's Workload, and a whole cell run through its build() and parse()."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from workload_server import site
from toolbench.adapters.engine import ADAPTER
from toolbench.adapters.engine_workload import WORKLOAD_FILE, workload_json
from toolbench.contract.adapter import Found, RawOutput
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.contract.workload import Level, support_for
from toolbench.engine import workload as engine_workload
from toolbench.engine.options import EngineError
from toolbench.engine.workload import from_dict, load
from toolbench.engine.workload_http import at_path, judge, request_bytes
from toolbench.engine.workload_stages import arrival_s, users_at
from toolbench.errors import AdapterError
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec
from toolbench.scenario.workload import (FEATURES, Checks, DataFile, Extract, Stage, ThinkTime, Workload,
                                         WorkloadRequest)


def minimal(**kw: Any) -> dict[str, Any]:
    request = dict(name="a", method="GET", path="/", query={}, headers={}, body=None, weight=1.0, extract=[],
                   checks=None)
    request.update(kw.pop("request", {}))
    return {"version": 1, "order": "sequence", "requests": [request], "data": None, "think": None, "stages": [], **kw}


@pytest.mark.parametrize("change, words", [
    ({"extra": 1}, "unknown key 'extra'"),
    ({"version": 2}, "version 2"),
    ({"order": "random"}, "order"),
    ({"request": {"colour": "red"}}, "unknown key 'colour'"),
    ({"request": {"path": "/a b"}}, "path"),
    ({"request": {"path": "/a?b=1"}}, "the query goes in `query`"),
    ({"request": {"headers": {"X": "a\r\nEvil: 1"}}}, "line break"),
    ({"request": {"method": "G E T"}}, "method"),
    ({"request": {"extract": [{"variable": "v", "regex": "no group"}]}}, "needs a group"),
    ({"request": {"extract": [{"variable": "v", "json_path": "$..a"}]}}, "json_path"),
    ({"request": {"checks": {"json_path": "$.a"}}}, "go together"),
    ({"request": {"checks": {"status": [99]}}}, "status"),
    ({"request": {"weight": float("inf")}}, "weight"),
    ({"data": {"columns": ["u"], "rows": [["1", "2"]], "per": "user", "at_end": "stop"}}, "2 values for 1 columns"),
    ({"think": {"min_s": 0.5, "max_s": 0.1}}, "below min_s"),
    ({"stages": [{"duration_s": 1, "users": 1}, {"duration_s": 1, "rate_rps": 5}]}, "every stage gives users"),
    ({"stages": [{"duration_s": 0, "users": 1}]}, "positive"),
])
def test_the_file_is_read_strictly(change: dict[str, Any], words: str) -> None:
    with pytest.raises(EngineError, match=words.replace("?", r"\?").replace("$", r"\$")):
        from_dict(json.loads(json.dumps(minimal(**change))))


def test_sizes_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many = minimal()
    many["requests"] = [dict(many["requests"][0], name=f"r{i}") for i in range(engine_workload.MAX_REQUESTS + 1)]
    with pytest.raises(EngineError, match="more than 64 entries"):
        from_dict(many)
    with pytest.raises(EngineError, match="longer than"):
        from_dict(minimal(request={"body": "x" * (engine_workload.MAX_BODY + 1)}))
    path = tmp_path / "w.json"
    path.write_text(json.dumps(minimal()))
    assert load(path).names == ("a",)
    monkeypatch.setattr(engine_workload, "MAX_FILE_BYTES", 10)
    with pytest.raises(EngineError, match="larger than"):
        load(path)
    path.write_text('{"version": NaN}')
    monkeypatch.setattr(engine_workload, "MAX_FILE_BYTES", 1 << 20)
    with pytest.raises(EngineError, match="not a JSON workload"):
        load(path)


def test_variables_are_encoded_for_where_they_go() -> None:
    spec = from_dict(minimal(request={"method": "POST", "path": "/u/${id}/x", "query": {"q": "${id}", "k": "v w"},
                                      "headers": {"X-Who": "${id}"}, "body": '{"id": "${id}", "none": "${nope}"}'}))
    sent = request_bytes(spec.requests[0], {"id": "a/b c\r\nX-Evil: 1"}, "h:1", keepalive=False)
    head, _, body = sent.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /u/a%2Fb%20c%0D%0AX-Evil%3A%201/x?q=a%2Fb+c%0D%0AX-Evil%3A+1&k=v+w HTTP/1.1"
    assert b"X-Who: a/b cX-Evil: 1" in lines and not any(line.startswith(b"X-Evil") for line in lines)
    assert b"Connection: close" in lines and f"Content-Length: {len(body)}".encode() in lines
    assert body == b'{"id": "a/b c\r\nX-Evil: 1", "none": ""}'


def test_json_paths_and_verdicts() -> None:
    doc = {"a": {"b": [10, {"c": True}]}}
    assert at_path(doc, "$.a.b[0]") == 10 and at_path(doc, "$.a.b[1].c") is True
    assert at_path(doc, "$") == doc and at_path(doc, "$.a.x") is not None  # a miss is its own marker
    spec = from_dict(minimal(request={"extract": [{"variable": "n", "json_path": "$.a.b[0]"}],
                                      "checks": {"json_path": "$.a.b[1].c", "json_equals": True}}))
    body = json.dumps(doc).encode()
    assert judge(spec.requests[0], 200, body, len(body)) == ("ok", {"n": "10"})
    assert judge(spec.requests[0], 200, b'{"a": {"b": [1, {"c": 1}]}}', 30)[0] == "check"  # 1 is not true
    assert judge(spec.requests[0], 200, b"not json", 8) == ("check", {})


def test_users_and_arrivals_follow_the_stages() -> None:
    stages = (engine_workload.Stage(2.0, users=4), engine_workload.Stage(1.0, users=4),
              engine_workload.Stage(2.0, users=0))
    assert [users_at(stages, t) for t in (0.0, 0.49, 0.5, 1.0, 2.0, 2.5, 3.0, 4.0, 5.0, 9.0)] == \
        [0, 0, 1, 2, 4, 4, 4, 2, 0, 0]
    rates = (engine_workload.Stage(1.0, rate_rps=100.0), engine_workload.Stage(1.0, rate_rps=100.0))
    times = [arrival_s(n, rates, None) for n in range(200)]
    due = [t for t in times if t is not None]
    # 0 to 100/s over 1 s is 50 arrivals due, then 100 in the hold; none after the last stage.
    assert len(due) == 150 and due == sorted(due) and len([t for t in due if t < 1.0]) == 50
    assert arrival_s(0, (), 10.0) == pytest.approx(0.05) and arrival_s(9, (), 10.0) == pytest.approx(0.95)


# ---- the adapter ----

def scenario_workload(tmp_path: Path, **kw: Any) -> Workload:
    csv_file = tmp_path / "users.csv"
    csv_file.write_text("user,password,term\nu0,pw-u0,apples\nu1,pw-u1,\"pears, ripe\"\n")
    login = WorkloadRequest(name="login", method="POST", path="/login", headers={"Content-Type": "application/json"},
                            body='{"user": "${user}", "password": "${password}"}',
                            extract=(Extract("token", json_path="$.token"),), checks=Checks(status=(200,)))
    search = WorkloadRequest(name="search", path="/api/search", query={"q": "${term}"},
                             headers={"Authorization": "Bearer ${token}"},
                             checks=Checks(status=(200,), json_path="$.count", json_equals=3, max_bytes=65536))
    fields: dict[str, Any] = dict(order="sequence", requests=(login, search),
                                  data=DataFile(str(csv_file), "users.csv", ("user", "password", "term"), 2),
                                  think=ThinkTime(0.001, 0.002))
    fields.update(kw)
    return Workload(**fields)


def cell(workload: Workload, base: str = "http://127.0.0.1:9", **kw: Any) -> Cell:
    fields: dict[str, Any] = dict(scenario="s", tool="engine", concurrency=2, keepalive=True, repetition=3,
                                  request=RequestSpec(method="POST", path="/login"), stop=StopSpec(duration_s=1.0),
                                  timeout_s=10.0, workload=workload, options={"workers": 1})
    fields.update(kw)
    return Cell(**fields).at(base)


def test_the_engine_declares_every_feature_honoured(tmp_path: Path) -> None:
    stages = (Stage(1.0, users=2), Stage(1.0, users=0))
    asked = scenario_workload(tmp_path, order="mix", stages=stages)
    support = support_for(ADAPTER.workload_features, "engine", asked)
    assert set(support) == set(asked.features()) and {s.level for s in support.values()} == {Level.HONOURED}
    assert set(ADAPTER.workload_features) == set(FEATURES)


def test_build_writes_the_workload_file_the_engine_reads(tmp_path: Path) -> None:
    stages = (Stage(0.5, users=2), Stage(0.5, users=2))
    inv = ADAPTER.build(cell(scenario_workload(tmp_path, stages=stages)), tmp_path, Found(sys.executable, "x"))
    assert inv.argv[3] == "http://127.0.0.1:9/" and inv.argv[-2:] == ["--workload", WORKLOAD_FILE]
    assert "--method" not in inv.argv and "--body" not in inv.argv
    spec = from_dict(json.loads(inv.files[WORKLOAD_FILE]))
    assert spec.names == ("login", "search") and spec.seed == 3 and spec.think == (0.001, 0.002)
    assert spec.data is not None and spec.data.rows == (("u0", "pw-u0", "apples"), ("u1", "pw-u1", "pears, ripe"))
    assert [(s.duration_s, s.users) for s in spec.stages] == [(0.5, 2), (0.5, 2)]
    assert spec.requests[1].checks is not None and spec.requests[1].checks.json_equals == 3
    asked = scenario_workload(tmp_path)
    (tmp_path / "users.csv").write_text("user,password\nu0,p\n")  # since the scenario was read
    with pytest.raises(AdapterError, match="changed"):
        workload_json(asked, 1)


def test_a_cell_runs_through_build_and_parse_with_figures_per_name(tmp_path: Path) -> None:
    with site() as (url, s):
        the_cell = cell(scenario_workload(tmp_path), base=url)
        inv = ADAPTER.build(the_cell, tmp_path, Found(sys.executable, "x"))
        for name, text in inv.files.items():
            (tmp_path / name).write_text(text)
        done = subprocess.run(inv.argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        summary = done.stdout.split("By request", 1)[1].splitlines()[1:]
        named = [line.split()[0] for line in summary if line.startswith("    ")]
        assert named == ["login", "search"]  # the summary's lines per request name
        m = parse_checked(ADAPTER, RawOutput(stdout=done.stdout, stderr=done.stderr, exit_code=0,
                                             files={"json": tmp_path / "engine.json"}, source="cell"))
        searches = s.by_path("/api/search")
    assert [f.name for f in m.by_request] == ["login", "search"]
    assert m.counts.requests_failed == 0 and m.counts.failures.check == 0
    assert sum(f.counts.requests_total or 0 for f in m.by_request) == m.counts.requests_total
    assert {x.query["q"] for x in searches} == {"apples", "pears, ripe"}
    assert {x.headers["authorization"] for x in searches} == {"Bearer tok-u0", "Bearer tok-u1"}


def test_the_command_takes_users_and_length_from_the_stages(tmp_path: Path) -> None:
    wl = minimal(request={"path": "/page"}, stages=[{"duration_s": 0.4, "users": 3}, {"duration_s": 0.4, "users": 3}])
    (tmp_path / "w.json").write_text(json.dumps(wl))
    with site() as (url, _):
        done = subprocess.run([sys.executable, "-m", "toolbench.engine", url + "/", "--workload", "w.json", "-w", "1",
                               "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["identity"]["concurrency"] == 3
    assert 0.75 <= result["measurement"]["timing"]["duration_s"] <= 1.8
    assert [f["name"] for f in result["measurement"]["by_request"]] == ["a"]
