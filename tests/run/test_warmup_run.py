"""The warm-up and the ramp flag through the runner: real ab and Locust against the test nginx."""
import re

import pytest

from conftest import need
from helpers.scenarios import write as write_scenario
from toolbench.contract import registry
from toolbench.contract.adapter import RawOutput
from toolbench.record import store
from toolbench.record.schema import Status
from toolbench.report import render
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration

WARM = """\
name: warm
target: {{url: "{url}"}}
matrix: {{tool: [{tool}], concurrency: [4]}}
stop: {{duration: {stop}}}
warmup: {warmup}
probe: {{enabled: false}}
"""


def _ab_figures(folder) -> int:
    """Requests ab itself counted in the run whose output is in `folder`."""
    raw = RawOutput(stdout=(folder / "stdout.txt").read_text(), stderr=(folder / "stderr.txt").read_text(),
                    exit_code=0, source=str(folder))
    return registry.get("ab").parse(raw).counts.requests_total


def test_the_warmup_runs_before_the_cell_and_is_not_counted(tmp_path, nginx):
    need("ab")
    s = scenario.load(write_scenario(tmp_path, WARM.format(url=nginx.base_url, tool="ab", stop="1s", warmup="1s")))
    run = store.RunDir.open(runner.run(s, tmp_path / "reports").run_dir)
    (r,) = run.results()
    assert r.outcome.status is Status.OK, r.outcome.error
    assert r.warmup is not None and r.warmup.duration_s == 1.0 and r.warmup.wall_s > 0
    folder = run.path / r.warmup.path
    assert folder == run.path / "raw" / "ab-c4-ka-rep1" / "warmup"
    assert "-t 1 " in (folder / "command.txt").read_text()
    warmed = _ab_figures(folder)  # nginx answered these before the measured run began
    assert warmed > 0
    assert r.warmup.ended_at <= r.measurement.timing.started_at
    measured = _ab_figures(run.path / "raw" / "ab-c4-ka-rep1")
    assert r.measurement.counts.requests_total == measured  # the warm-up's requests are not in it
    roles = {a.role: a.path for a in r.outcome.artifacts}
    assert roles["warm-up stdout"] == r.warmup.path + "/stdout.txt"
    html = render.render_run(run.path).read_text()
    assert "Each cell ran after a warm-up of 1 s" in html


def test_a_warmup_that_fails_fails_the_cell_with_the_reason(tmp_path, nginx):
    need("ab")
    text = WARM.format(url=nginx.base_url, tool="ab", stop="1s", warmup="1s") + "request: {path: /no-such-page}\n"
    s = scenario.load(write_scenario(tmp_path, text))
    run = store.RunDir.open(runner.run(s, tmp_path / "reports").run_dir)
    (r,) = run.results()
    assert r.outcome.status is Status.FAILED
    assert r.outcome.error.startswith("the 1s warm-up failed, so the cell did not run: ")
    assert re.search(r"no successful request: \d+ http", r.outcome.error), r.outcome.error  # ab: Non-2xx
    assert r.warmup is not None and r.warmup.duration_s == 1.0
    assert not (run.path / "raw" / "ab-c4-ka-rep1" / "stdout.txt").exists()  # the measured run never started
    assert (run.path / r.warmup.path / "stderr.txt").is_file()


def test_a_locust_cell_shorter_than_five_ramps_is_noted_and_flagged(tmp_path, nginx):
    s = scenario.load(write_scenario(tmp_path, WARM.format(url=nginx.base_url, tool="locust", stop="2s",
                                                           warmup="0")))
    run = store.RunDir.open(runner.run(s, tmp_path / "reports").run_dir)
    (r,) = run.results()
    if r.outcome.status is Status.TOOL_MISSING:
        pytest.skip(r.outcome.error)
    assert r.outcome.status is Status.OK, r.outcome.error
    assert r.warmup is None and r.ramp_s == 1.0
    assert r.measurement.timing.duration_s < 5.0
    assert any("under 5x locust's 1s ramp" in note for note in r.notes), r.notes
    html = render.render_run(run.path).read_text()
    assert 'class="flag" title="measured over less than 5 times' in html and "⏱" in html
    assert "ran after a warm-up" not in html


SLOW_START = '''\
"""A FastHttpUser that waits 3 s before its first request: a 1 s warm-up ends before it sends."""
import json
from pathlib import Path

import gevent
from locust import FastHttpUser, task

PATH = json.loads(Path(__file__).with_name("locust_params.json").read_text())["path"]


class SlowStart(FastHttpUser):
    def on_start(self):
        gevent.sleep(3)

    @task
    def get(self):
        self.client.get(PATH)
'''


def test_a_warmup_that_ends_before_the_tool_sends_anything_is_noted_and_the_cell_runs(tmp_path, nginx):
    (tmp_path / "slow_start.py").write_text(SLOW_START)
    text = WARM.format(url=nginx.base_url, tool="slow", stop="6s", warmup="1s") + (
        "tools: {slow: {use: locust, locustfile: slow_start.py}}\n")
    run = store.RunDir.open(runner.run(scenario.load(write_scenario(tmp_path, text)), tmp_path / "reports",
                                       allow_commands=True).run_dir)
    (r,) = run.results()
    if r.outcome.status is Status.TOOL_MISSING:
        pytest.skip(r.outcome.error)
    assert r.outcome.status is Status.OK, r.outcome.error
    assert r.measurement.counts.requests_ok > 0
    assert any(note.startswith("the 1s warm-up ended before locust sent a request") for note in r.notes), r.notes
    assert r.warmup is not None and (run.path / r.warmup.path / "stdout.txt").is_file()
