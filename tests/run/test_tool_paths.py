"""Tools are looked for on the host that runs them, at the path a scenario gives for them
there; a tool that cannot run there is a tool_missing cell whose error says why."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from toolbench.contract.host import Captured
from toolbench.hosts.local import LocalHost
from toolbench.record import store
from toolbench.record.schema import Status
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration


def run(tmp_path: Path, text: str, host: LocalHost | None = None) -> dict[str, object]:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    summary = runner.run(scenario.load(path), tmp_path / "reports", host=host, allow_commands=True)
    return {r.identity.tool: r for r in store.RunDir.open(summary.run_dir).results()}


def test_a_path_the_host_does_not_have_is_a_missing_tool_naming_the_line(tmp_path):
    text = """\
name: paths
hosts:
  generator:
    address: local
    tools: {ab: /nonexistent/bin/ab, python: /nonexistent/bin/python3}
target: {server: nginx-static}
matrix: {tool: [ab, engine], concurrency: [1]}
stop: {requests: 10}
probe: {enabled: false}
"""
    results = run(tmp_path, text)
    ab, engine = results["ab"], results["engine"]
    assert ab.outcome.status is Status.TOOL_MISSING and engine.outcome.status is Status.TOOL_MISSING
    assert ab.outcome.error == f"{tmp_path / 's.yaml'}:5: hosts.generator.tools.ab: local: /nonexistent/bin/ab: " \
                              "no such executable"
    assert engine.outcome.error.startswith(f"{tmp_path / 's.yaml'}:5: hosts.generator.tools.python: no Python with "
                                           "toolbench.engine on local: local: /nonexistent/bin/python3: no such")


class Debian213(LocalHost):
    """This machine, except that its only JMeter is Debian's 2.13, answering as recorded
    (the package cannot stay installed here)."""

    # The runner raises limits and ties tools to its lifeline on the host it is given; no tool
    # runs here (the only JMeter cannot), so this host stays itself.
    def with_limits(self, wanted):
        return self

    def with_lifeline(self, lifeline):
        return self

    def with_pin(self, pin):
        return self

    def which(self, program: str) -> str | None:
        return "/usr/bin/jmeter" if program == "jmeter" else super().which(program)

    def capture(self, argv: list[str], timeout_s: float = 10.0) -> Captured:
        if argv[:2] == ["/usr/bin/jmeter", "--version"]:
            return Captured(0, (FIXTURES / "jmeter" / "2.13-debian-version.txt").read_text(), "")
        return super().capture(argv, timeout_s)


def test_why_a_tool_cannot_run_is_the_missing_cells_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLBENCH_TOOLS", str(tmp_path / "no-tools"))  # no JMeter of ours: PATH's is the one
    monkeypatch.delenv("TOOLBENCH_JMETER_HOME", raising=False)
    if LocalHost().which("java") is None:
        pytest.skip("no java here")
    text = "name: old\ntarget: {server: nginx-static}\nmatrix: {tool: [jmeter]}\nstop: {requests: 10}\n"
    (result,) = run(tmp_path, text, host=Debian213()).values()
    assert result.outcome.status is Status.TOOL_MISSING
    assert result.outcome.error == ("/usr/bin/jmeter is JMeter 2.13: Debian's JMeter 2.13 cannot run test plans on "
                                    "Debian 12 (xstream ForbiddenClassException); run `toolbench install jmeter`")
