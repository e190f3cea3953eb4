"""The real Locust, single-process and with --processes 2, driven by the runner
against the bundled nginx on loopback."""
import dataclasses
import json
from pathlib import Path

import pytest

from toolbench.adapters.locust import adapter as locust
from toolbench.contract import registry
from toolbench.record import histogram, store
from toolbench.record.schema import RunResult, Status
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration

SCENARIO = """\
name: locust-{name}
target: {{server: nginx-static}}
matrix:
  tool: [locust]
  concurrency: [4]
  keepalive: {keepalive}
stop: {stop}
tools:
  locust: {{processes: {processes}}}
"""


def run(tmp_path: Path, name: str, keepalive: str = "[true]", stop: str = "{duration: 2s}",
        processes: int = 1) -> dict[str, RunResult]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(SCENARIO.format(name=name, keepalive=keepalive, stop=stop, processes=processes))
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    return {r.identity.cell_id: r for r in store.RunDir.open(summary.run_dir).results()}


def assert_consistent(r: RunResult) -> None:
    assert r.outcome.status is Status.OK, r.outcome.error
    total = r.measurement.counts.requests_total
    assert total and total > 50 and r.measurement.counts.requests_failed == 0
    assert r.identity.tool_version == "2.47.0"
    # Locust's own req/s counts from the test's start, spawning included; toolbench's from the
    # first response to the last. So toolbench's is not below Locust's, and above it by at most
    # the part of the run before the first response (wall time over measured span). A fixed
    # tolerance here failed on a loaded host, where spawning two workers takes most of a 2 s cell.
    rates, timing = r.measurement.rates, r.measurement.timing
    assert rates.rps <= rates.rps_derived * 1.05
    assert rates.rps_derived <= rates.rps * timing.wall_s / timing.duration_s * 1.05
    assert histogram.decode(r.measurement.histogram).get_total_count() == total
    assert sum(s.requests for s in r.measurement.series) == total
    assert r.measurement.transfer.received_bytes == 13 * total  # nginx-static's "Hello, World!"
    assert r.measurement.latency.min_ms <= r.measurement.latency.mean_ms <= r.measurement.latency.max_ms
    assert r.measurement.timing.duration_s < r.measurement.timing.wall_s
    assert any("JSON output" in note for note in r.all_notes)


def test_single_process_keepalive_on_and_off(tmp_path):
    results = run(tmp_path, "single", keepalive="[true, false]")
    assert set(results) == {"locust-c4-ka-rep1", "locust-c4-close-rep1"}
    for r in results.values():
        assert_consistent(r)
    close_file = tmp_path / "reports"
    params = list(close_file.glob("*/raw/locust-c4-close-rep1/locust_params.json"))
    assert len(params) == 1 and json.loads(params[0].read_text())["headers"] == {"Connection": "close"}


def test_two_worker_processes(tmp_path):
    (r,) = run(tmp_path, "multi", processes=2).values()
    assert_consistent(r)
    command = next(tmp_path.glob("reports/*/raw/*/command.txt")).read_text()
    assert "--processes 2" in command


def test_a_request_budget_stops_at_exactly_that_count(tmp_path):
    (r,) = run(tmp_path, "budget", stop="{requests: 300}").values()
    assert r.outcome.status is Status.OK, r.outcome.error
    assert r.measurement.counts.requests_total == 300


class BrokenLocustfile(locust.LocustAdapter):
    """The real Locust adapter, with a locustfile that fails to import."""

    def build(self, cell, workdir, found):
        invocation = super().build(cell, workdir, found)
        files = dict(invocation.files, **{"locustfile.py": "import toolbench_no_such_module\n"})
        return dataclasses.replace(invocation, files=files)


def test_a_locustfile_that_fails_to_import_is_a_failed_cell_with_the_reason(tmp_path, monkeypatch):
    broken = BrokenLocustfile()
    real_get = registry.get
    monkeypatch.setattr(registry, "get", lambda name: broken if name == "locust" else real_get(name))
    (r,) = run(tmp_path, "broken").values()
    assert r.outcome.status is Status.FAILED
    assert r.outcome.exit_code == 1
    assert "No module named 'toolbench_no_such_module'" in r.outcome.error
