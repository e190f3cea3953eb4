"""wrk with a workload (issue 32): the Lua script toolbench makes (hostile values as Lua string
literals, read back by wrk's own Lua), and short real runs against a logged nginx-static and a
small JSON server of the test's own, checked against what the targets saw."""
from __future__ import annotations

import http.server
import json
import subprocess
import threading
from pathlib import Path
from typing import Iterator

import pytest

from helpers.logged_nginx import logged_nginx, need_nginx
from helpers.workload_live import data_file, found, run, served, workload_cell
from toolbench.adapters import wrk, wrk_workload
from toolbench.contract.workload import Level, support_for
from toolbench.scenario.workload import Checks, Extract, Stage, ThinkTime, Workload, WorkloadRequest

ADAPTER = wrk.ADAPTER
HOSTILE = ['a"b\\c', "]]..[[", "line\r\nX-Evil: 1", "nul\x00byte", "é€😀", "%s%q%%", "\\0001\\\"", "end\\"]


def test_lua_strings_read_back_by_wrks_lua_are_the_values_exactly(tmp_path: Path):
    need_nginx()
    literals = ", ".join(wrk_workload.lua_string(v) for v in HOSTILE)
    (tmp_path / "t.lua").write_text(
        'local f = assert(io.open("decoded.bin", "wb"))\n'
        f'for _, v in ipairs({{{literals}}}) do f:write(v, "\\255") end\nf:close()\n')
    assert all("\n" not in wrk_workload.lua_string(v) and wrk_workload.lua_string(v).count('"') == 2 for v in HOSTILE)
    with logged_nginx(tmp_path / "nginx") as target:
        subprocess.run([found(ADAPTER).path, "-t1", "-c1", "-d1s", "-s", "t.lua", target.base_url + "/"],
                       cwd=tmp_path, capture_output=True, timeout=30, check=True)
    decoded = (tmp_path / "decoded.bin").read_bytes().split(b"\xff")[:-1]
    assert decoded == [v.encode() for v in HOSTILE]


def test_the_script_holds_every_value_as_a_literal_and_refuses_what_wrk_cannot():
    wl = Workload("sequence", (WorkloadRequest("a", path="/${x}", headers={"X-A": '"]] ..os.exit()'},
                                               body="\n--]]os.exit()", checks=Checks(json_path="$.a[2].b",
                                                                                     json_equals="q\"")),))
    text = wrk_workload.script(workload_cell("wrk", wl))
    assert "os.exit()" in text and '"\\034]] ..os.exit()"' in text and '"\\010--]]os.exit()"' in text
    assert 'json = {"a", 3, "b"}, equals = "q\\034"' in text
    regex = Workload("sequence", (WorkloadRequest("a", extract=(Extract("t", regex="t=(.*)"),)),))
    assert "regular expressions" in ADAPTER.supports(workload_cell("wrk", regex)).reason
    assert "one thread per connection" in ADAPTER.supports(workload_cell("wrk", wl, concurrency=300)).reason
    staged = Workload("mix", (WorkloadRequest("a"), WorkloadRequest("b")), stages=(Stage(1.0, users=2),))
    support = support_for(ADAPTER.workload_features, "wrk", staged)
    assert support["stages"].level is Level.UNSUPPORTED and support["per_request"].level is Level.APPROXIMATED
    assert support["mix"].level is Level.HONOURED


def live(tmp_path: Path, wl: Workload, base_url: str | None = None, **kw):
    (tmp_path / "cell").mkdir()
    return run(ADAPTER, workload_cell("wrk", wl, base_url or "http://127.0.0.1:1", **kw), tmp_path / "cell")


def test_a_sequence_with_data_per_user_and_checks_counted_per_name(tmp_path: Path):
    need_nginx()
    data = data_file(tmp_path, [{"f": "1k.bin"}, {"f": "100k.bin"}])
    wl = Workload("sequence", (
        WorkloadRequest("file", path="/${f}", checks=Checks(max_bytes=2000)),  # 100k.bin fails it
        WorkloadRequest("gone", path="/nope", checks=Checks(status=(404,))),  # a 404 is what it asks
        WorkloadRequest("home", path="/", checks=Checks(contains="Hello"))), data=data)
    with logged_nginx(tmp_path / "nginx") as target:
        before = served(target.lines())
        m, _ = live(tmp_path, wl, target.base_url, concurrency=2)
        log = served(target.lines()) - before
    names = {f.name: f.counts for f in m.by_request}
    assert sum(c.requests_total for c in names.values()) == m.counts.requests_total > 30
    small, big = log["GET /1k.bin HTTP/1.1"], log["GET /100k.bin HTTP/1.1"]
    assert small and big and abs(names["file"].requests_total - (small + big)) <= 2  # in flight at the stop
    assert abs(names["file"].failures.check - big) <= 1 and abs(names["file"].requests_ok - small) <= 1
    assert names["gone"].requests_ok == names["gone"].requests_total and names["gone"].failures.http == 0
    assert names["home"].requests_ok == names["home"].requests_total
    assert m.counts.failures.check == names["file"].failures.check and m.counts.failures.http == 0
    assert m.counts.requests_ok == m.counts.requests_total - names["file"].failures.check


def test_a_weighted_mix_and_think_time(tmp_path: Path):
    need_nginx()
    wl = Workload("mix", (WorkloadRequest("home", path="/", weight=1), WorkloadRequest("kb", path="/1k.bin", weight=3)))
    slow = Workload("mix", wl.requests, think=ThinkTime(0.2, 0.2))
    with logged_nginx(tmp_path / "nginx") as target:
        before = served(target.lines())
        m, _ = live(tmp_path, wl, target.base_url, concurrency=2)
        log = served(target.lines()) - before
        (tmp_path / "slow").mkdir()
        paused, _ = live(tmp_path / "slow", slow, target.base_url, concurrency=2)
    names = {f.name: f.counts.requests_total for f in m.by_request}
    assert abs(names["kb"] - log["GET /1k.bin HTTP/1.1"]) <= 2 and abs(names["home"] - log["GET / HTTP/1.1"]) <= 2
    assert 2.4 < names["kb"] / names["home"] < 3.6 and names["kb"] + names["home"] > 400
    assert 0 < paused.counts.requests_total <= 2 * (1 + 1.2 / 0.2)  # each user waits 200 ms before all but its first


class _Login(http.server.BaseHTTPRequestHandler):
    """POST /login answers a token in JSON; GET /search records the Authorization it was sent."""

    seen: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(json.dumps({"token": 'tok"en\\1', "n": [1, {"k": 7}]}))

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization") or "")
        self._answer('{"count": 3}')

    def _answer(self, body: str) -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def login_server() -> Iterator[str]:
    _Login.protocol_version = "HTTP/1.1"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Login)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_token_extracted_by_json_path_reaches_the_next_request(tmp_path: Path, login_server: str):
    _Login.seen.clear()
    wl = Workload("sequence", (
        WorkloadRequest("login", method="POST", path="/login", body='{"u": 1}',
                        extract=(Extract("token", json_path="$.token"), Extract("k", json_path="$.n[1].k")),
                        checks=Checks(status=(200,))),
        WorkloadRequest("search", path="/search", headers={"Authorization": "Bearer ${token} ${k}"},
                        checks=Checks(json_path="$.count", json_equals=3)),
        WorkloadRequest("miss", path="/search", checks=Checks(json_path="$.count", json_equals=4))))
    m, _ = live(tmp_path, wl, login_server, concurrency=1)
    names = {f.name: f.counts for f in m.by_request}
    assert set(_Login.seen) == {'Bearer tok"en\\1 7', ""}  # "miss" sends no Authorization
    assert names["search"].requests_ok == names["search"].requests_total > 0
    assert names["miss"].failures.check == names["miss"].requests_total > 0 and names["login"].failures.check == 0
