"""The engine as a Locust worker under a real Locust master (the installed version),
against the bundled nginx; and the same through the runner (`workers: engine`)."""
from __future__ import annotations

import csv
import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolbench.engine import locust_cell
from toolbench.errors import ScenarioError
from toolbench.record import store
from toolbench.record.schema import Status
from toolbench.run import plan, runner
from toolbench.scenario import read as scenario
from toolbench.servers.process import RunningTarget

pytestmark = pytest.mark.integration

LOCUSTFILE = """\
from locust import FastHttpUser, constant, task


class Anyone(FastHttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        self.client.get("/")
"""
REPORTED = re.compile(r"engine: (\d+) requests \((\d+) failed\) reported to the Locust master")


def master(folder: Path, host: str, port: int, workers: int, users: int = 4) -> subprocess.Popen[str]:
    (folder / "locustfile.py").write_text(LOCUSTFILE)
    argv = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--master", "--headless",
            "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
            "--expect-workers", str(workers), "--expect-workers-max-wait", "30",
            "-u", str(users), "-r", str(users), "-t", "3s", "--host", host,
            "--json", "--csv", "out", "--only-summary", "--loglevel", "WARNING", "--exit-code-on-error", "0"]
    return subprocess.Popen(argv, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def worker(url: str, port: int, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "toolbench.engine", url, "--locust-master", f"127.0.0.1:{port}", *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def drive(tmp_path: Path, nginx: RunningTarget, path: str, workers: int, *extra: str,
          base_url: str | None = None) -> tuple[dict, list[tuple[int, int]], Path]:
    """A 3 s master run with engine workers (loading `base_url`, nginx's by default): the
    master's one JSON entry, what each worker says it reported, and the master's folder."""
    port = locust_cell.free_port()
    boss = master(tmp_path, nginx.base_url, port, workers)
    hands = [worker((base_url or nginx.base_url) + path, port, *extra) for _ in range(workers)]
    out, err = boss.communicate(timeout=90)
    said = [hand.communicate(timeout=30)[1] for hand in hands]
    assert boss.returncode == 0, err
    assert [hand.returncode for hand in hands] == [0] * workers, said
    reported = [tuple(map(int, m.groups())) for text in said for m in [REPORTED.search(text)] if m]
    assert len(reported) == workers, said
    (entry,) = json.loads(out)
    return entry, reported, tmp_path


@pytest.mark.parametrize("workers", [1, 2])
def test_a_master_counts_every_request_its_engine_workers_sent(tmp_path, nginx, workers):
    entry, reported, _ = drive(tmp_path, nginx, "/", workers)
    total = entry["num_requests"]
    assert total == sum(n for n, _ in reported) and total > 100
    assert entry["num_failures"] == 0 and all(failed == 0 for _, failed in reported)
    assert (entry["name"], entry["method"]) == ("/", "GET")
    assert sum(entry["response_times"].values()) == total
    assert sum(entry["num_reqs_per_sec"].values()) == total
    assert entry["total_content_length"] == 13 * total  # nginx-static's "Hello, World!"
    assert 0 < entry["min_response_time"] <= entry["total_response_time"] / total <= entry["max_response_time"]


def test_a_throughput_per_user_paces_the_users_as_constant_throughput(tmp_path, nginx):
    entry, reported, _ = drive(tmp_path, nginx, "/", 1, "--user-throughput", "5")
    # 4 users at 5 requests/s each for the master's 3 s (and the moments around them);
    # unpaced, the same run sends thousands.
    assert 0 < entry["num_requests"] == reported[0][0] <= 4 * 5 * 5


def test_a_404_is_a_failure_in_the_masters_stats_and_error_report(tmp_path, nginx):
    entry, reported, folder = drive(tmp_path, nginx, "/nope", 1)
    total = entry["num_requests"]
    assert total > 100 and entry["num_failures"] == total == reported[0][1]
    with open(folder / "out_failures.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["Method"], r["Name"], r["Error"]) for r in rows] == [("GET", "/nope", "LocustBadStatusCode(code=404)")]
    assert int(rows[0]["Occurrences"]) == total


def test_a_request_without_an_answer_is_a_timeout_failure(tmp_path, nginx):
    with socket.socket() as silent:  # handshakes complete in the backlog; nothing is ever read
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        entry, reported, folder = drive(tmp_path, nginx, "/", 1, "--timeout", "1", base_url=url)
    assert entry["num_requests"] == entry["num_failures"] == reported[0][1] >= 4  # each of 4 users once
    assert entry["min_response_time"] >= 1000
    with open(folder / "out_failures.csv", newline="") as fh:
        assert {row["Error"] for row in csv.DictReader(fh)} == {"TimeoutError('timed out')"}


def long_master(folder: Path, host: str, port: int) -> subprocess.Popen[str]:
    """A master of a 60 s run, returned once its users are spawned on its one worker."""
    (folder / "locustfile.py").write_text(LOCUSTFILE)
    boss = subprocess.Popen([sys.executable, "-m", "locust", "-f", "locustfile.py", "--master", "--headless",
                             "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
                             "--expect-workers", "1", "-u", "2", "-r", "2", "-t", "60s", "--host", host,
                             "--json", "--only-summary", "--loglevel", "INFO", "--csv", "stats"],
                            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return boss


def wait_for_requests(folder: Path, boss: subprocess.Popen[str], timeout_s: float = 60) -> None:
    """Until the master has counted requests from its worker (its stats history, written
    every second): on a busy machine the users may not have sent any yet at "spawned"."""
    history = folder / "stats_stats_history.csv"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and boss.poll() is None:
        if history.exists():
            rows = list(csv.DictReader(history.read_text().splitlines()))
            if any(int(row["Total Request Count"]) > 0 for row in rows if row.get("Total Request Count")):
                return
        time.sleep(0.2)
    raise AssertionError(f"the master counted no request within {timeout_s:g}s")


def wait_for_spawn(boss: subprocess.Popen[str]) -> None:
    assert boss.stderr is not None
    for line in boss.stderr:  # the master starts its users once the worker has joined
        if "All users spawned" in line:
            return


def test_a_worker_stopped_by_sigterm_tells_its_master_and_reports_first(tmp_path, nginx):
    port = locust_cell.free_port()
    boss = long_master(tmp_path, nginx.base_url, port)
    hand = worker(nginx.base_url + "/", port)
    try:
        wait_for_spawn(boss)
        wait_for_requests(tmp_path, boss)
        hand.send_signal(signal.SIGTERM)
        _, said = hand.communicate(timeout=60)
        out, _ = boss.communicate(timeout=60)  # the master ends with its last worker
    finally:
        for proc in (boss, hand):
            if proc.poll() is None:
                proc.kill()
    assert hand.returncode == 128 + signal.SIGTERM
    match = REPORTED.search(said)
    assert match, said
    (entry,) = json.loads(out)
    assert entry["num_requests"] == int(match.group(1)) > 0


def test_a_worker_that_loses_its_master_stops_by_itself(tmp_path, nginx):
    port = locust_cell.free_port()
    boss = long_master(tmp_path, nginx.base_url, port)
    hand = worker(nginx.base_url + "/", port, "--master-timeout", "2s")
    try:
        wait_for_spawn(boss)
        boss.send_signal(signal.SIGKILL)
        boss.wait(timeout=30)
        _, err = hand.communicate(timeout=60)
    finally:
        for proc in (boss, hand):
            if proc.poll() is None:
                proc.kill()
    assert hand.returncode == 1
    assert "lost the Locust master at 127.0.0.1" in err and "no heartbeat for" in err


def test_a_worker_without_a_master_stops_by_itself(nginx):
    hand = worker(nginx.base_url + "/", locust_cell.free_port(), "--master-timeout", "1s", "--join-timeout", "2s")
    _, err = hand.communicate(timeout=30)  # well under the 60 s it would wait without --join-timeout
    assert hand.returncode == 1 and "no Locust master answered at 127.0.0.1" in err


SCENARIO = """\
name: locust-engine-workers
target: {{server: nginx-static}}
matrix:
  tool: [locust-engine]
  concurrency: [4]
stop: {{duration: 3s}}
tools:
  locust-engine: {{use: locust, workers: {workers}, processes: 2}}
"""


def test_a_scenario_cell_with_engine_workers_ends_ok(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(workers="engine"))
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    (result,) = store.RunDir.open(summary.run_dir).results()
    assert result.outcome.status is Status.OK, result.outcome.error
    assert result.identity.tool == "locust" and result.identity.variant == "locust-engine"
    counts = result.measurement.counts
    log = next(tmp_path.glob("reports/*/raw/*/engine_workers.txt")).read_text()
    reported = [int(m.group(1)) for m in REPORTED.finditer(log)]
    assert len(reported) == 2 and counts.requests_total == sum(reported) > 100
    assert counts.requests_failed == 0
    command = next(tmp_path.glob("reports/*/raw/*/command.txt")).read_text()
    assert "toolbench.engine.locust_cell 2 " in command


def test_an_unknown_kind_of_workers_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(workers="boomer"))
    with pytest.raises(ScenarioError, match=r"s\.yaml:8: tools\.locust-engine\.workers: expected one of "
                                            r"locust, engine, got 'boomer'"):
        runner.run(scenario.load(path), tmp_path / "reports")


def test_engine_workers_have_no_stop_after_n_requests(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(workers="engine").replace("{duration: 3s}", "{requests: 1000}"))
    (planned,) = plan.expand(scenario.load(path))
    assert not planned.support.ok and "stop after N requests is not supported" in planned.support.reason
