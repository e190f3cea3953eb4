"""Issue 32's bundled workload target against the real stacks: the workload app (a login giving a
token, a search that needs it, a POST of a JSON body, a page) under uWSGI behind nginx, gunicorn
and Flask's dev server; and the access log nginx keeps for a workload's cells, read back per cell
(toolbench.servers.access_log) for exactly the requests sent, toolbench's probe's left out, and
kept by no other target."""
from __future__ import annotations

import csv
import dataclasses
import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from toolbench.errors import ScenarioError, SchemaError
from toolbench.record.observed import PathRequests, TargetRequests
from toolbench.record.schema import Identity, Outcome, RunResult, Status
from toolbench.contract.adapter import Support
from toolbench.contract.cell import Cell
from toolbench.run import probe
from toolbench.run.plan import PlannedCell
from toolbench.run.serving import Batch
from toolbench.scenario import read
from toolbench.scenario.request import RequestSpec
from toolbench.scenario.targets import GunicornOptions, NginxOptions, TargetSpec, UwsgiOptions, parse_target
from toolbench.scenario.yamlread import Node
from toolbench.servers import access_log, python_stacks, stacks
from toolbench.servers.apps import workload_app

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
USERS = REPO / "scenarios" / "data" / "users.csv"


def rows() -> list[dict[str, str]]:
    with USERS.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def call(url: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def login(base: str, user: str, password: str) -> tuple[int, bytes]:
    return call(base + "/login", json.dumps({"user": user, "password": password}).encode(),
                {"Content-Type": "application/json"})


def search(base: str, token: str, q: str) -> tuple[int, bytes]:
    return call(f"{base}/api/search?q={urllib.request.quote(q)}", headers={"Authorization": f"Bearer {token}"})


def target_spec(node_text: str) -> TargetSpec:
    return parse_target(Node(yaml.compose(node_text), "t.yaml", "targets.t"), "t")


def test_the_bundled_data_file_has_users_passwords_and_terms() -> None:
    found = rows()
    assert len(found) >= 50 and set(found[0]) == {"user", "password", "term"}
    assert len({r["user"] for r in found}) == len(found) and all(r["password"] and r["term"] for r in found)
    assert workload_app.load_users(USERS) == {r["user"]: r["password"] for r in found}


def test_the_workload_app_on_uwsgi_behind_nginx(tmp_path: Path) -> None:
    spec = target_spec("{server: nginx-uwsgi, app: workload, processes: 2, workers: 1}")
    assert spec.app == "workload" and not spec.access_log  # the runner turns the log on, per batch
    row = rows()[7]
    with stacks.start(spec, tmp_path, 10) as target:
        base = target.base_url
        status, body = login(base, row["user"], row["password"])
        assert status == 200, body
        token = json.loads(body)["token"]
        assert token.isalnum() and token == token.lower()  # a regex [a-z0-9]+ extracts it
        for _ in range(6):  # both uWSGI processes check the token: one secret per start
            status, body = search(base, token, row["term"])
            assert status == 200, body
            found = json.loads(body)
            assert found["q"] == row["term"] and found["count"] == 3 and len(found["results"]) == 3
        assert search(base, token[:-1] + ("0" if token[-1] != "0" else "1"), "x")[0] == 401
        assert search(base, "", "x")[0] == 401
        assert call(base + "/api/search?q=x")[0] == 401
        assert login(base, row["user"], "wrong")[0] == 401 and login(base, "nobody", "pw")[0] == 401
        assert call(base + "/login", b"not json", {"Content-Type": "application/json"})[0] == 401
        status, body = call(base + "/api/items", (REPO / "scenarios" / "bodies" / "item.json").read_bytes(),
                            {"Content-Type": "application/json"})
        assert status == 201 and isinstance(json.loads(body)["id"], int)
        assert call(base + "/api/items", b"{not json")[0] == 400
        status, page = call(base + "/page")
        assert status == 200 and 1800 <= len(page) <= 4096 and b"toolbench workload page" in page
        assert target.access_log is None  # off unless asked
    assert not list(tmp_path.rglob("access.log"))


@pytest.mark.parametrize("entry", ["{server: gunicorn, workers: 2, app: workload}",
                                   "{server: flask-dev, app: workload}"])
def test_the_other_python_stacks_serve_the_workload_app(tmp_path: Path, entry: str) -> None:
    row = rows()[0]
    with stacks.start(target_spec(entry), tmp_path, 4) as target:
        status, body = login(target.base_url, row["user"], row["password"])
        assert status == 200, body
        token = json.loads(body)["token"]
        assert all(search(target.base_url, token, row["term"])[0] == 200 for _ in range(6))
        assert call(target.base_url + "/")[1] == b"toolbench workload app\n"


def test_tokens_hold_across_processes_that_share_the_secret_and_no_further(monkeypatch: pytest.MonkeyPatch) -> None:
    # gunicorn builds the app in each worker: only the secret the stack passes makes their tokens one.
    monkeypatch.setenv(workload_app.SECRET_ENV, "a" * 64)
    one, two = workload_app.create_app().test_client(), workload_app.create_app().test_client()
    monkeypatch.setenv(workload_app.SECRET_ENV, "b" * 64)
    other = workload_app.create_app().test_client()
    row = rows()[3]
    token = one.post("/login", json={"user": row["user"], "password": row["password"]}).get_json()["token"]
    bearer = {"Authorization": f"Bearer {token}"}
    assert two.get("/api/search?q=a", headers=bearer).status_code == 200
    assert other.get("/api/search?q=a", headers=bearer).status_code == 401
    assert one.post("/api/items", data=b"[" * (workload_app.MAX_BODY + 10)).status_code == 413  # bounded bodies


def test_each_start_gets_a_secret_of_its_own_and_the_hello_app_is_unchanged() -> None:
    ini = python_stacks.uwsgi_ini("/tmp/x.sock", UwsgiOptions(), True, app="workload")
    assert "module = toolbench.servers.apps.workload_app:create_app()\n" in ini
    secrets = {line for line in ini.splitlines() if line.startswith("env = TOOLBENCH_WORKLOAD_SECRET=")}
    again = python_stacks.uwsgi_ini("/tmp/x.sock", UwsgiOptions(), True, app="workload")
    assert len(secrets) == 1 and secrets.pop() not in again
    assert python_stacks.WORKLOAD_SECRET_ENV == workload_app.SECRET_ENV
    settings: dict = {}
    exec(python_stacks.gunicorn_conf(4000, GunicornOptions(), app="workload"), {}, settings)
    assert settings["wsgi_app"].startswith("toolbench.servers.apps.workload_app:")
    assert settings["raw_env"][0].startswith("TOOLBENCH_WORKLOAD_SECRET=")
    hello = python_stacks.uwsgi_ini("/tmp/x.sock", UwsgiOptions(), True)
    assert "flask_hello" in hello and "env =" not in hello
    assert "raw_env" not in python_stacks.gunicorn_conf(4000, GunicornOptions())
    with pytest.raises(ScenarioError, match="hello"):
        target_spec("{server: uwsgi, app: nope}")
    with pytest.raises(ScenarioError, match="app"):
        target_spec("{server: nginx-static, app: workload}")


def test_the_runner_asks_for_the_access_log_for_a_workload_only(tmp_path: Path) -> None:
    scenario = read.load(REPO / "scenarios" / "workload.yaml")
    assert scenario.workload is not None and scenario.targets["nginx-uwsgi"].app == "workload"
    spec = scenario.targets["nginx-uwsgi"]

    def planned(workload: object) -> PlannedCell:
        cell = Cell(scenario="s", tool="wrk", concurrency=1, keepalive=True, repetition=1, request=scenario.request,
                    stop=scenario.stop, timeout_s=5.0, target="nginx-uwsgi",
                    workload=workload)  # type: ignore[arg-type]
        return PlannedCell(cell, Support(True))

    assert Batch("nginx-uwsgi", spec, [planned(None), planned(scenario.workload)], tmp_path).served.access_log is True
    assert Batch("nginx-uwsgi", spec, [planned(None)], tmp_path).served.access_log is False
    assert spec.access_log is False


def raw_get(base: str, path: str, agent: str) -> int:
    """One request on a connection of its own with a User-Agent as given, through no client's checks."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nUser-Agent: {agent}\r\nConnection: close\r\n\r\n"
                     .encode("latin-1"))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def test_the_access_log_counts_a_cells_requests_per_path_and_status_without_the_probes(tmp_path: Path) -> None:
    spec = target_spec("{server: nginx-uwsgi, app: workload, processes: 2, workers: 1}")
    spec = dataclasses.replace(spec, access_log=True)
    row = rows()[1]
    with stacks.start(spec, tmp_path, 10) as target:
        base = target.base_url
        assert target.access_log == str(tmp_path.resolve() / "nginx" / "access.log")
        call(base + "/page")  # before the cell: not counted
        window = access_log.mark(target.access_log)
        token = json.loads(login(base, row["user"], row["password"])[1])["token"]
        login(base, row["user"], "wrong")
        for _ in range(3):
            search(base, token, row["term"])
        search(base, "bad", "x")
        call(base + "/api/items", b'{"a": 1}', {"Content-Type": "application/json"})
        # toolbench's own probe, as a cell's: it names itself, and its lines are counted apart
        sent = probe.ProbeTarget.of(base + "/login", RequestSpec(method="POST", path="/login", body='{"user": "${user}"}',
                                                                 headers={"user-agent": "the scenario's"}))
        probe.timed_request(sent, 10)
        probe.timed_request(sent, 10)
        # A client naming itself with a tab, quotes and a backslash: still one line of the log.
        assert raw_get(base, '/page?x="y"', 'evil\t"agent"\\ \x7f') == 200
        http_client_page(base)  # a request without a User-Agent is the tool's: counted
        found = access_log.read(access_log.ended(window))
    assert found is not None and found.lines_unread == 0 and found.probe_requests == 2
    by = {(p.method, p.path): p for p in found.paths}
    assert set(by) == {("POST", "/login"), ("GET", "/api/search"), ("POST", "/api/items"), ("GET", "/page")}
    assert by["POST", "/login"].by_status == {200: 1, 401: 1}  # the probe's two 401s left out
    assert by["GET", "/api/search"].by_status == {200: 3, 401: 1}
    assert by["POST", "/api/items"].by_status == {201: 1}
    assert by["GET", "/page"].by_status == {200: 2} and found.requests == 9 and found.other_requests == 0
    assert all(sum(p.per_second) == p.count for p in found.paths) and found.started_epoch_s is not None
    assert abs(found.started_epoch_s - time.time()) < 600


def http_client_page(base: str) -> None:
    conn = http.client.HTTPConnection(base.removeprefix("http://"), timeout=10)
    try:
        conn.request("GET", "/page")
        conn.getresponse().read()
    finally:
        conn.close()


def test_nginx_static_keeps_the_access_log_when_asked_and_only_then(tmp_path: Path) -> None:
    plain = TargetSpec(kind="nginx-static", nginx=NginxOptions(workers=1))
    with stacks.start(plain, tmp_path / "plain", 4) as target:
        call(target.base_url + "/")
        assert target.access_log is None
    assert not list((tmp_path / "plain").rglob("access.log"))
    logged = TargetSpec(kind="nginx-static", nginx=NginxOptions(workers=1), access_log=True)
    with stacks.start(logged, tmp_path / "logged", 4) as target:
        assert target.access_log is not None
        window = access_log.mark(target.access_log)
        for path in ("/", "/1k.bin", "/1k.bin", "/nope"):
            call(target.base_url + path)
        found = access_log.read(access_log.ended(window))
    assert found is not None
    assert {(p.path, tuple(p.by_status.items())) for p in found.paths} == {
        ("/", ((200, 1),)), ("/1k.bin", ((200, 2),)), ("/nope", ((404, 1),))}


def test_a_replaced_log_reads_as_absent_and_a_line_not_of_the_format_as_unread(tmp_path: Path) -> None:
    spec = TargetSpec(kind="nginx-static", nginx=NginxOptions(workers=1), access_log=True)
    with stacks.start(spec, tmp_path, 4) as target:
        assert target.access_log is not None
        log = Path(target.access_log)
        window = access_log.mark(log)
        call(target.base_url + "/")
        end = access_log.ended(window)
    with log.open("ab") as out:  # not nginx's: what a hostile or damaged log could hold
        out.write(b"1796217739.525\tGET\t/x\t2000\t1\t1\t\n")
    found = access_log.read(access_log.Window(log, window.start, window.epoch_s, log.stat().st_size))
    assert found is not None and found.requests == 1 and found.lines_unread == 1
    assert access_log.read(access_log.Window(log, window.start, window.epoch_s, end.end + 10**6)) is None
    assert access_log.read(window) is None  # never ended


def test_target_requests_round_trip_in_a_run_result_and_refuse_counts_that_do_not_add_up() -> None:
    paths = [PathRequests("GET", "/page", 3, {200: 2, 500: 1}, [1, 0, 2])]
    kept = TargetRequests(paths=paths, requests=4, other_requests=1, probe_requests=2, started_epoch_s=1.5)
    result = RunResult(Identity(scenario="s", cell_id="c", tool="wrk", tool_version=None, target_label="t",
                                url="http://127.0.0.1/", concurrency=1, keepalive=True, repetition=1),
                       Outcome(Status.OK), target_requests=kept)
    back = RunResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back.target_requests == kept and back.target_requests.count("/page") == 3
    with pytest.raises(SchemaError):
        TargetRequests(paths=paths, requests=5)  # 3 by path and none other
    with pytest.raises(SchemaError):  # a path's seconds short of its count
        TargetRequests(paths=[PathRequests("GET", "/", 2, {200: 2}, [1])], requests=2)
    with pytest.raises(SchemaError):
        TargetRequests(paths=[PathRequests("GET", "/", -1, {200: -1}, [-1])], requests=-1)
