"""A server that accepts connections and never answers, and one whose full backlog lets no
connection through: every tool's failed cell says which, in words, instead of an exit code
or 0 requests with every failure class 0. And ab's own error line, not its usage text."""
import shutil
from pathlib import Path

import pytest

from conftest import need
from helpers.blackholes import Silent, Unreachable
from toolbench.record import derive, diagnose, store
from toolbench.record.schema import Counts, Measurement, RunResult, Status
from toolbench.run import runner
from toolbench.scenario import read as scenario

SCENARIO = """\
name: {name}
target: {{url: "{url}"}}
matrix: {{tool: [{tools}], concurrency: [2]}}
stop: {{duration: 1s}}
timeout: 20s
cooldown: 0s
probe: {{enabled: false}}
tools: {{ab: {{timeout_s: 2}}, engine: {{timeout_s: 2}}}}
"""


def run(tmp_path: Path, name: str, url: str, tools: str) -> dict[str, RunResult]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(SCENARIO.format(name=name, url=url, tools=tools))
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    return {r.identity.tool: r for r in store.RunDir.open(summary.run_dir).results()}


@pytest.mark.integration
def test_the_check_after_a_silent_cell_tells_the_three_cases_apart(nginx):
    silent, unreachable = Silent(), Unreachable()
    try:
        assert diagnose.reach(silent.url, 1.0) is derive.Reach.ANSWERS  # its one readiness answer
        assert diagnose.reach(unreachable.url, 1.0) is derive.Reach.ANSWERS
        silent.answered.wait(5), unreachable.answered.wait(5)
        assert diagnose.reach(silent.url, 1.0) is derive.Reach.SILENT
        assert diagnose.reach(unreachable.url, 1.0) is derive.Reach.CONNECT_TIMEOUT
        assert diagnose.reach(nginx.base_url + "/", 1.0) is derive.Reach.ANSWERS
    finally:
        silent.close(), unreachable.close()
    assert diagnose.reach(silent.url, 1.0) is derive.Reach.REFUSED


def test_a_cell_that_counted_nothing_is_described_by_what_the_target_did():
    nothing = Measurement(tool="siege", counts=Counts(requests_total=0, requests_ok=0, requests_failed=0))

    def why(reach):
        return derive.cell_status(nothing, 0, timed_out=False, interrupted=False, timeout_s=10, stderr="",
                            wall_s=2.04, reach=reach)

    assert why(derive.Reach.SILENT) == (Status.FAILED, (
        "no successful request: no response within 2.0s: siege counted no request; the target accepts "
        "connections (toolbench's own too) and answered none"))
    assert why(derive.Reach.CONNECT_TIMEOUT)[1] == (
        "no successful request: connect timeout: siege counted no request within 2.0s, and the target "
        "accepted no connection from toolbench either")
    assert why(None)[1] == "no successful request: no response within 2.0s: siege counted no request, " \
                           "neither answered nor failed"


@pytest.mark.integration
def test_against_a_server_that_never_answers_each_tool_says_so(tmp_path):
    for tool in ("ab", "siege"):
        need(tool)
    server = Silent()
    try:
        results = run(tmp_path, "silent", server.url, "engine, ab, siege, locust")
    finally:
        server.close()
    assert all(r.outcome.status is Status.FAILED for r in results.values())
    errors = {tool: r.outcome.error for tool, r in results.items()}
    assert errors["engine"].startswith("exit code 1: engine: no response within 1.0s: 2 connection(s) open, "
                                       "no request answered"), errors
    assert errors["ab"] == "exit code 119: apr_pollset_poll: The timeout specified has expired (70007)", errors
    for tool in ("siege", "locust"):
        assert errors[tool].startswith("no successful request: no response within "), errors
        assert errors[tool].endswith(f"s: {tool} counted no request; the target accepts connections "
                                     "(toolbench's own too) and answered none"), errors


@pytest.mark.integration
def test_against_a_server_that_accepts_no_connection_each_tool_says_connect_timeout(tmp_path):
    need("siege")
    server = Unreachable()
    try:
        results = run(tmp_path, "unreachable", server.url, "engine, siege, locust")
    finally:
        server.close()
    errors = {tool: r.outcome.error for tool, r in results.items()}
    assert errors["engine"].endswith(f"connect timeout: 127.0.0.1:{server.port} accepted no connection within 2s"), \
        errors
    for tool in ("siege", "locust"):
        assert errors[tool].startswith(f"no successful request: connect timeout: {tool} counted no request "
                                       "within "), errors
        assert errors[tool].endswith("s, and the target accepted no connection from toolbench either"), errors


@pytest.mark.integration
def test_ab_refusing_its_arguments_gives_its_error_line_not_its_usage(tmp_path, nginx):
    need("ab")
    path = tmp_path / "huge.yaml"
    path.write_text(SCENARIO.format(name="huge", url=nginx.base_url, tools="ab")
                    .replace("concurrency: [2]", "concurrency: [30000]").replace("duration: 1s", "requests: 100"))
    summary = runner.run(scenario.load(path), tmp_path / "reports", go_on=True)
    (result,) = store.RunDir.open(summary.run_dir).results()
    assert result.outcome.status is Status.FAILED
    # ab names itself by the path it was started as: the one found on the host.
    assert result.outcome.error.startswith(
        f"exit code 22: {shutil.which('ab')}: Cannot use concurrency level greater than total number of requests"), \
        result.outcome.error
