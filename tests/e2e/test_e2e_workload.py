"""A workload run end to end against the bundled workload app behind nginx: every tool that can
express it runs it, and what each says it sent is checked against what reached the target (its
access log): the requests per name match the requests per path within what was in flight at the
stop, a sequence gives each request an equal share, every login used a row of the data file (a 200
only for a known user and password), and every search carried the token extracted from its user's
login (a 200 only with a valid one). A second run, whose page check cannot pass, counts every page
as a failed `check`, and nothing else."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from toolbench.record import store
from toolbench.record.schema import RunResult, Status
from toolbench.run import runner
from toolbench.scenario import bundled
from toolbench.scenario import read as scenario

TOOLS = ("engine", "locust", "jmeter", "wrk")
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("nginx") is None or shutil.which("wrk") is None,
                                 reason="nginx or wrk is not installed (scripts/install.sh installs them)")]

USERS = 4
CLIENT_CLOSED = 499  # nginx's own status for a request its client closed
MANIFESTS: list = []  # each run's, in order
SCENARIO = """\
name: workload-e2e
target: {server: nginx-uwsgi, app: workload, processes: 2}
workload:
  order: sequence
  data: {file: data/users.csv, per: user}
  think: {uniform: [5ms, 15ms]}
  requests:
    - name: login
      method: POST
      path: /login
      headers: {Content-Type: application/json}
      body: '{"user": "${user}", "password": "${password}"}'
      extract: {token: {json: $.token}}
      checks: {status: [200], contains: token}
    - name: search
      path: /api/search
      query: {q: "${term}"}
      headers: {Authorization: "Bearer ${token}"}
      checks: {status: [200], json: {path: $.count, equals: 3}}
    - name: page
      path: /page
      checks: {status: [200], contains: PAGE_TEXT, max_bytes: 4096}
matrix: {tool: [TOOLS], concurrency: [USERS], keepalive: [true]}
stop: {duration: 3s}
timeout: 120s
repeat: 1
cooldown: 0s
order: as-written
placement: none
calibrate: false
probe: {interval: 500ms, baseline: 2}
disturbed: none
"""


def _run(folder: Path, page_text: str, tools: tuple[str, ...] = TOOLS) -> dict[str, RunResult]:
    (folder / "data").mkdir(parents=True)
    shutil.copy(bundled.folder() / "data" / "users.csv", folder / "data" / "users.csv")
    path = folder / "s.yaml"
    path.write_text(SCENARIO.replace("PAGE_TEXT", page_text).replace("TOOLS", ", ".join(tools))
                    .replace("USERS", str(USERS)))
    run_dir = runner.run(scenario.load(path), folder / "reports", system_check=False).run_dir
    MANIFESTS.append(store.RunDir.open(run_dir).manifest())
    return {r.identity.tool: r for r in store.RunDir.open(run_dir).results()}


@pytest.fixture(scope="module")
def passing(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunResult]:
    return _run(tmp_path_factory.mktemp("workload"), "toolbench workload page")


def test_every_tool_that_expresses_it_runs_it(passing: dict[str, RunResult]) -> None:
    assert set(passing) == set(TOOLS)
    for tool, result in passing.items():
        assert result.outcome.status is Status.OK, (tool, result.outcome.error)
        assert result.measurement.counts.requests_ok, tool


def test_the_run_records_what_each_tool_said_it_could_express(passing: dict[str, RunResult]) -> None:
    asked = {"sequence", "data", "extract", "think", "checks", "per_request"}
    recorded = {t.tool: t.workload for t in MANIFESTS[0].tools}
    assert set(recorded) == set(TOOLS)
    for tool, features in recorded.items():
        assert set(features) == asked, (tool, set(features))
    assert {f: r.level for f, r in recorded["engine"].items()} == dict.fromkeys(asked, "honoured")
    assert recorded["wrk"]["per_request"].level == "approximated" and recorded["wrk"]["per_request"].how


def test_what_each_tool_counts_per_name_is_what_reached_the_target(passing: dict[str, RunResult]) -> None:
    paths = {"login": ("POST", "/login"), "search": ("GET", "/api/search"), "page": ("GET", "/page")}
    for tool, result in passing.items():
        logged = result.target_requests
        assert logged is not None and logged.lines_unread == 0, tool
        by_path = {(p.method, p.path): p for p in logged.paths}
        assert set(by_path) == set(paths.values()), (tool, set(by_path))
        named = {f.name: f for f in result.measurement.by_request}
        assert set(named) == set(paths), (tool, set(named))
        for name, key in paths.items():
            sent = named[name].counts.requests_total
            # A request the tool gave up on at the stop may still have reached the target, and one
            # cut off there may not have: at most one per user either way.
            assert sent is not None and abs(by_path[key].count - sent) <= USERS, (tool, name, sent, by_path[key].count)
        counts = [by_path[key].count for key in paths.values()]
        assert max(counts) - min(counts) <= USERS, (tool, counts)  # a sequence: equal shares


def test_the_data_rows_and_the_extracted_token_reached_the_target(passing: dict[str, RunResult]) -> None:
    for tool, result in passing.items():
        by_path = {(p.method, p.path): p for p in result.target_requests.paths}
        # The app answers 200 only to a user and password of the data file, and a search only with
        # the token its login returned; anything else is a 401. nginx logs 499 for a request whose
        # client closed before the answer: the tool's stop, at most one per user.
        for key in (("POST", "/login"), ("GET", "/api/search")):
            statuses = dict(by_path[key].by_status)
            cut_at_stop = statuses.pop(CLIENT_CLOSED, 0)
            assert set(statuses) == {200} and cut_at_stop <= USERS, (tool, key, by_path[key].by_status)
        assert not result.measurement.counts.failures.check, tool


def test_a_failed_check_is_counted_as_such_per_name(tmp_path: Path) -> None:
    # The engine and wrk (Locust's and JMeter's check class: their adapters' tests, with a real run).
    failing = _run(tmp_path, "a text the page never holds", ("engine", "wrk"))
    assert set(failing) == {"engine", "wrk"}
    for tool, result in failing.items():
        named = {f.name: f for f in result.measurement.by_request}
        page = named["page"].counts
        assert page.requests_total and page.failures.check == page.requests_total == page.requests_failed, (tool, page)
        assert named["login"].counts.requests_failed == 0 and named["search"].counts.requests_failed == 0, tool
        assert result.measurement.counts.failures.check == page.requests_total, tool
