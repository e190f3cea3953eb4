"""The runner end to end: real ab and siege against a real nginx, on loopback."""
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, need
from helpers.blackholes import Silent
from helpers.scenarios import write as write_scenario
from toolbench.contract.adapter import Adapter, Found, Invocation
from toolbench.errors import ToolbenchError
from toolbench.hosts.local import LocalHost
from toolbench.record import store
from toolbench.record.manifest import RunStatus
from toolbench.record.schema import Status
from toolbench.run import programs, runner
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration


QUICK = """\
name: quick
target: {{server: nginx-static}}
matrix:
  tool: [ab, siege]
  concurrency: [4]
  keepalive: [true, false]
  rate: {rate}
stop: {{duration: 1s}}
"""


def test_a_run_keeps_results_raw_output_and_manifest(tmp_path):
    need("ab"), need("siege")
    s = scenario.load(write_scenario(tmp_path, QUICK.format(rate="[null, 50]")))
    summary = runner.run(s, tmp_path / "reports")
    run = store.RunDir.open(summary.run_dir)
    results = {r.identity.cell_id: r for r in run.results()}
    assert len(results) == 8
    for cell_id in ("ab-c4-ka-rep1", "ab-c4-close-rep1", "siege-c4-ka-rep1", "siege-c4-close-rep1"):
        r = results[cell_id]
        assert r.outcome.status is Status.OK, r.outcome.error
        assert r.measurement.counts.requests_ok and r.measurement.counts.requests_ok > 100
        assert r.measurement.rates.rps and r.measurement.timing.wall_s
        # siege often ends a timed run early; toolbench says so instead of hiding it.
        assert r.measurement.timing.wall_s >= 0.9 or any("of the 1s asked" in note for note in r.all_notes)
        assert r.identity.url.startswith("http://127.0.0.1:")
        for artifact in r.outcome.artifacts:
            assert (run.path / artifact.path).is_file(), artifact
    assert results["ab-c4-ka-rate50-rep1"].outcome.status is Status.UNSUPPORTED
    assert "open model" in results["ab-c4-ka-rate50-rep1"].outcome.error
    manifest = run.manifest()
    assert manifest.status is RunStatus.COMPLETE
    assert manifest.tool_version("ab") == "2.3"
    assert manifest.environment.cpu_count >= 1 and manifest.scenario.text.startswith("name: quick")
    (target,) = manifest.targets
    assert target.kind == "nginx-static" and target.url.startswith("http://127.0.0.1:")
    siegerc = (run.path / "raw" / "siege-c4-ka-rep1" / "siegerc").read_text()
    assert "connection = keep-alive" in siegerc and "json_output = true" in siegerc


def test_resume_skips_the_cells_already_measured(tmp_path):
    need("ab")
    text = QUICK.format(rate="[null]").replace("[ab, siege]", "[ab]").replace("[true, false]", "[true]")
    s = scenario.load(write_scenario(tmp_path, text))
    first = runner.run(s, tmp_path / "reports")
    before = (first.run_dir / "results.jsonl").read_text()
    s2 = scenario.load(write_scenario(tmp_path, text.replace("concurrency: [4]", "concurrency: [4, 8]")))
    again = runner.run(s2, tmp_path / "reports", resume=first.run_dir)
    lines = (again.run_dir / "results.jsonl").read_text().splitlines()
    assert lines[0] == before.strip()  # the measured cell is kept as it was, not run again
    assert [json.loads(line)["identity"]["cell_id"] for line in lines] == ["ab-c4-ka-rep1", "ab-c8-ka-rep1"]


def test_a_run_resumes_only_with_the_profile_it_started_with(tmp_path):
    need("ab")
    text = (QUICK.format(rate="[null]").replace("[ab, siege]", "[ab]").replace("[true, false]", "[true]")
            + "profiles:\n  quick: {stop: {requests: 20}}\n")
    path = write_scenario(tmp_path, text)
    first = runner.run(scenario.load(path, "quick"), tmp_path / "reports")
    assert store.RunDir.open(first.run_dir).manifest().scenario.profile == "quick"
    with pytest.raises(ToolbenchError, match="started with --profile quick; resume it the same way"):
        runner.run(scenario.load(path), tmp_path / "reports", resume=first.run_dir)
    assert store.RunDir.open(first.run_dir).manifest().status is RunStatus.COMPLETE  # still resumable


def test_the_hard_timeout_kills_the_whole_process_tree(tmp_path):
    out, err = tmp_path / "o", tmp_path / "e"
    script = "sleep 30 & echo $! > child.pid; wait"
    started = time.monotonic()
    done = LocalHost().run(["sh", "-c", script], cwd=tmp_path, stdout=out, stderr=err, timeout_s=1.0)
    assert done.timed_out and done.exit_code is None
    assert time.monotonic() - started < 10
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


def test_a_hung_tool_costs_one_timed_out_cell_and_the_rest_runs(tmp_path):
    need("ab")
    tarpit = Silent()  # answers the readiness check, then never again
    try:
        text = f"""\
name: hang
target: {{url: "http://127.0.0.1:{tarpit.port}"}}
matrix: {{tool: [ab], concurrency: [1, 2]}}
stop: {{requests: 5}}
timeout: 1s
"""
        summary = runner.run(scenario.load(write_scenario(tmp_path, text)), tmp_path / "reports")
    finally:
        tarpit.close()
    results = store.RunDir.open(summary.run_dir).results()
    assert [r.outcome.status for r in results] == [Status.TIMED_OUT, Status.TIMED_OUT]
    assert "hard limit of 1s" in results[0].outcome.error
    assert (summary.run_dir / "raw" / "ab-c1-ka-rep1" / "stdout.txt").exists()


def test_ctrl_c_stops_cleanly_and_keeps_what_was_measured(tmp_path):
    need("ab")
    text = QUICK.format(rate="[null]").replace("[ab, siege]", "[ab]").replace("concurrency: [4]", "concurrency: [1, 2, 3, 4]")
    path = write_scenario(tmp_path, text.replace("duration: 1s", "duration: 2s"))
    proc = subprocess.Popen([str(REPO / ".venv/bin/toolbench"), "run", str(path), "--reports-dir", str(tmp_path / "r")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    results = None
    while time.monotonic() < deadline:
        found = list((tmp_path / "r").glob("*/results.jsonl"))
        if found and found[0].read_text().count("\n") >= 1:
            results = found[0]
            break
        time.sleep(0.1)
    assert results is not None, "no cell finished in time"
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted by SIGINT; the cells measured so far are kept in" in err
    assert "Traceback" not in err
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert lines[0]["outcome"]["status"] == "ok"
    assert lines[-1]["outcome"]["status"] == "interrupted"
    assert json.loads((results.parent / "manifest.json").read_text())["status"] == "interrupted"
    assert out.strip().endswith("report.html")  # what was measured still renders


class HangsOnce(Adapter):
    """A tool that hangs on its first run and answers on the next: siege's occasional hang
    at the end of a timed run, made certain. It runs a real process; only its parse is tiny."""

    name = "hangs-once"
    retries_on_hang = 2

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def detect(self, host, path=None):
        return Found(path or "sh", "1")

    def build(self, cell, workdir, found):
        script = f'if [ -e "{self.marker}" ]; then echo done; else touch "{self.marker}"; sleep 30; fi'
        return Invocation(argv=[found.path, "-c", script], files={"input.txt": "kept in place"})

    def parse(self, raw):
        from toolbench.record.schema import Counts, Measurement
        return Measurement(tool=self.name, counts=Counts(requests_total=1, requests_ok=1))


def test_a_tool_that_hangs_is_run_again_and_the_hung_attempt_is_kept(tmp_path, monkeypatch):
    from toolbench.contract import registry
    adapter = HangsOnce(tmp_path / "ran-once")
    monkeypatch.setattr(registry, "_load_all", lambda: ({adapter.name: adapter}, {}))
    text = "name: hang\ntarget: {server: nginx-static}\nmatrix: {tool: [hangs-once]}\nstop: {requests: 1}\ntimeout: 1s\n"
    text += "warm_target: none\n"  # the hang is the cell's, not the target warm-up's
    summary = runner.run(scenario.load(write_scenario(tmp_path, text)), tmp_path / "reports")
    (result,) = store.RunDir.open(summary.run_dir).results()
    assert result.outcome.status is Status.OK
    assert any("killed (attempt 1 of 3" in note for note in result.notes)
    cell = summary.run_dir / "raw" / "hangs-once-c10-ka-rep1"
    assert (cell / "hung-1" / "stdout.txt").exists() and (cell / "stdout.txt").read_text() == "done\n"
    assert (cell / "input.txt").exists()  # inputs stay where the next attempt needs them


def test_a_command_target_is_started_checked_and_stopped(tmp_path):
    need("ab")
    from toolbench.contract.host import free_port
    port = free_port()
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "index.html").write_text("hi")
    text = f"""\
name: cmd
target:
  command: "{sys.executable} -m http.server {port} --bind 127.0.0.1 --directory {tmp_path / 'www'}"
  url: "http://127.0.0.1:{port}"
  ready: {{path: /index.html, timeout: 10s}}
request: {{path: /index.html}}
matrix: {{tool: [ab], concurrency: [2]}}
stop: {{requests: 50}}
"""
    loaded = scenario.load(write_scenario(tmp_path, text))
    # A scenario's own program is code: refused in one line naming its key, before anything starts.
    with pytest.raises(programs.CommandsNotAllowed, match=r"^\S+/s\.yaml:3: target\.command: .*--allow-commands$"):
        runner.run(loaded, tmp_path / "reports")
    assert not (tmp_path / "reports").exists()
    with pytest.raises(OSError):  # and it was not started
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    summary = runner.run(loaded, tmp_path / "reports", allow_commands=True)
    (result,) = store.RunDir.open(summary.run_dir).results()
    assert result.outcome.status is Status.OK and result.measurement.counts.requests_ok == 50
    recorded = json.loads((summary.run_dir / "manifest.json").read_text())["targets"]
    assert recorded == [{"name": "command", "kind": "command", "label": "command", "restart": "once", "error": None,
                         "url": f"http://127.0.0.1:{port}", "version": None, "tls_version": None, "tls_cipher": None,
                         "components": []}]
    assert result.identity.target_label == "command" and result.identity.url == f"http://127.0.0.1:{port}/index.html"
    with pytest.raises(OSError):  # stopped with the run: nothing answers any more
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_a_command_target_that_dies_fails_its_cells_with_the_reason(tmp_path):
    text = f"""\
name: dies
target: {{command: "{sys.executable} -c 'import sys; sys.exit(3)'", url: "http://127.0.0.1:9"}}
matrix: {{tool: [ab]}}
"""
    summary = runner.run(scenario.load(write_scenario(tmp_path, text)), tmp_path / "reports", allow_commands=True)
    (result,) = store.RunDir.open(summary.run_dir).results()
    assert result.outcome.status is Status.FAILED
    assert "the target did not start: command: exited with code 3 before it was ready" in result.outcome.error
    recorded = json.loads((summary.run_dir / "manifest.json").read_text())
    (target,) = recorded["targets"]
    assert recorded["status"] == "complete" and "exited with code 3" in target["error"]


def test_two_bundled_targets_each_serve_their_cells_and_are_watched(tmp_path):
    import dataclasses

    from toolbench.scenario.targets import NginxOptions, SocketOptions, TargetSpec
    text = "name: two\ntarget: {server: nginx-static}\nmatrix: {tool: [engine], concurrency: [4], keepalive: [false]}\n" \
           "stop: {duration: 1s}\nprobe: {enabled: false}\nmonitor: {interval: 0.2s}\n"
    s = scenario.load(write_scenario(tmp_path, text))
    specs = {"nginx": TargetSpec(kind="nginx-static", name="nginx", nginx=NginxOptions(workers=1)),
             "gevent": TargetSpec(kind="socket-gevent", name="gevent", socket=SocketOptions(sleep_s=0.05))}
    s = dataclasses.replace(s, targets=specs, matrix=dataclasses.replace(s.matrix, target=("nginx", "gevent")))
    summary = runner.run(s, tmp_path / "reports")
    run = store.RunDir.open(summary.run_dir)
    # Repetitions shuffle the targets' order, so the results are taken by target, not by position.
    by_target = {r.identity.target_label: r for r in run.results()}
    assert sorted(by_target) == ["gevent", "nginx"]
    nginx, gevent = by_target["nginx"], by_target["gevent"]
    assert (nginx.identity.cell_id, nginx.identity.target_label) == ("nginx-engine-c4-close-rep1", "nginx")
    assert (gevent.identity.cell_id, gevent.identity.target_label) == ("gevent-engine-c4-close-rep1", "gevent")
    for result in (nginx, gevent):
        assert result.outcome.status is Status.OK, result.outcome.error
        assert result.server_cost is not None and result.server_cost.workers == 1
        assert result.server_cost.samples >= 2 and result.server_cost.cpu_us_per_request is not None
        assert (run.path / "raw" / result.identity.cell_id / "server.jsonl").is_file()
    assert nginx.server_cost.cpu_user_s + nginx.server_cost.cpu_system_s > 0
    # 4 connections each waiting 0.05 s: the gevent server cannot pass 80 requests a second.
    assert 0 < gevent.measurement.counts.requests_ok <= 80 * gevent.measurement.timing.wall_s + 4
    recorded = {t.name: t for t in run.manifest().targets}
    assert (recorded["nginx"].version or "").startswith("nginx")
    assert recorded["gevent"].kind == "socket-gevent"
    assert nginx.identity.url != gevent.identity.url  # each on its own free port
