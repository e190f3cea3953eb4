"""The generator monitor, sampling real tools against a real nginx on loopback."""
import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, need
from toolbench.adapters import ab as ab_adapter
from toolbench.contract.adapter import RawOutput
from toolbench.hosts import monitor
from toolbench.hosts.local import LocalHost
from toolbench.hosts.monitor_read import parse_ss


def _run_ab(tmp_path: Path, url: str, interval_s: float, extra: list[str]) -> tuple:
    host = LocalHost()
    series = tmp_path / "monitor.jsonl"
    mon = monitor.Monitor(interval_s, monitor.port_of(url), series)
    running = host.start(["ab", *extra, "-t", "2", "-n", "1000000", url + "/"], cwd=tmp_path,
                         stdout=tmp_path / "out.txt", stderr=tmp_path / "err.txt")
    mon.start(running.pid, running.started)
    completed = running.wait(30)
    report = mon.stop()
    parsed = ab_adapter.parse(RawOutput(stdout=(tmp_path / "out.txt").read_text()))
    cost = monitor.summarize(report, wall_s=completed.wall_s, cpu_user_s=completed.cpu_user_s,
                             cpu_system_s=completed.cpu_system_s, requests_total=parsed.counts.requests_total,
                             tool="ab")
    return completed, report, cost, parsed, series


@pytest.mark.integration
def test_a_real_ab_run_gets_its_cost_sockets_and_tcp_window(tmp_path, nginx):
    need("ab"), need("ss")
    completed, report, cost, parsed, series = _run_ab(tmp_path, nginx.base_url, 0.25, ["-k", "-c", "4"])
    assert completed.exit_code == 0
    assert completed.cpu_user_s is not None and cost.cpu_user_s + cost.cpu_system_s > 0
    assert cost.cpu_us_per_request > 0
    assert cost.cpu_us_per_request == pytest.approx(
        (cost.cpu_user_s + cost.cpu_system_s) * 1e6 / parsed.counts.requests_total)
    assert 0 < cost.cpu_mean_pct <= 100 * os.cpu_count() and cost.cpu_peak_pct > 0
    assert cost.rss_peak_bytes > 1_000_000 and cost.threads_peak == 1 and cost.processes_peak == 1
    # ab -k -c 4 holds four connections to the target: one socket each, all established.
    assert cost.sockets_peak == 4 and cost.connections_peak == 4
    assert cost.open_files_peak >= 4 + 3  # and stdin, stdout, stderr
    assert cost.tcp_cwnd_mean > 0 and cost.tcp_rcv_space_mean > 0 and cost.tcp_rtt_mean_ms > 0
    assert cost.time_wait_peak is not None and cost.host_established_peak >= 4
    assert cost.load_avg_1m_peak is not None and cost.host_memory_used_peak_bytes > 0
    assert cost.samples >= 4 and cost.interval_s == 0.25
    assert 0 < cost.monitor_cpu_s < cost.cpu_user_s + cost.cpu_system_s
    rows = [json.loads(line) for line in series.read_text().splitlines()]
    assert len(rows) == cost.samples
    assert [r["t_s"] for r in rows] == sorted(r["t_s"] for r in rows)
    assert len(rows[1]["host"]["cpu_pct_per_core"]) == len(os.sched_getaffinity(0))
    assert max(r["tool"]["sockets"] for r in rows if r["tool"]) == 4
    with_tcp = [r for r in rows if r["tcp"]]
    # ss not at the start (nothing is connected yet), then at most every 2 s, however short the interval
    assert rows[0]["tcp"] is None and 1 <= len(with_tcp) <= 2 < len(rows)
    assert max(r["tcp"]["states"].get("ESTAB", 0) for r in with_tcp) >= 4


@pytest.mark.integration
def test_without_keepalive_the_time_wait_sockets_pile_up(tmp_path, nginx):
    need("ab")
    before = monitor.summarize(None, wall_s=None).time_wait_peak
    assert before is None  # no samples, no figure: absent, not 0
    _, _, cost, parsed, _ = _run_ab(tmp_path, nginx.base_url, 0.5, ["-c", "4"])
    assert parsed.counts.requests_total > 1000
    # Every closed connection leaves a TIME_WAIT socket on one side for 60 s.
    assert cost.time_wait_peak >= 1000
    assert cost.tcp_cwnd_mean is None or cost.tcp_cwnd_mean > 0


def test_a_tool_that_exits_before_the_monitor_starts_is_a_note(tmp_path):
    running = LocalHost().start(["true"], cwd=tmp_path, stdout=tmp_path / "o", stderr=tmp_path / "e")
    os.waitid(os.P_PID, running.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
    mon = monitor.Monitor(0.1, None, tmp_path / "monitor.jsonl")
    mon.start(running.pid, running.started)
    completed = running.wait(10)
    report = mon.stop()
    cost = monitor.summarize(report, wall_s=completed.wall_s, cpu_user_s=completed.cpu_user_s,
                             cpu_system_s=completed.cpu_system_s, requests_total=None)
    assert completed.exit_code == 0
    assert any("exited before the monitor's first sample" in n for n in cost.notes)
    assert cost.cpu_user_s is not None  # from the kernel's account at exit
    assert cost.rss_peak_bytes is None and cost.cpu_peak_pct is None and cost.cpu_us_per_request is None
    assert cost.samples == 1 and (tmp_path / "monitor.jsonl").read_text().count("\n") == 1


@pytest.mark.integration
def test_without_ss_the_tcp_figures_are_absent_and_said_so(tmp_path, nginx, monkeypatch):
    need("ab")
    ab = shutil.which("ab")
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # a real PATH with no ss on it
    mon = monitor.Monitor(0.2, monitor.port_of(nginx.base_url))
    running = LocalHost().start([ab, "-k", "-c", "2", "-t", "1", "-n", "100000", nginx.base_url + "/"],
                                cwd=tmp_path, stdout=tmp_path / "o", stderr=tmp_path / "e")
    mon.start(running.pid, running.started)
    completed = running.wait(30)
    cost = monitor.summarize(mon.stop(), wall_s=completed.wall_s, cpu_user_s=completed.cpu_user_s,
                             cpu_system_s=completed.cpu_system_s)
    assert any("ss is not installed" in n for n in cost.notes)
    assert cost.tcp_cwnd_mean is None and cost.connections_peak is None
    assert cost.sockets_peak == 2  # still known from the tool's descriptors


def test_ss_output_is_read_for_the_tools_sockets_only():
    text = (FIXTURES / "ss" / "6.1.0-keepalive.txt").read_text()
    inodes = frozenset(int(x) for x in (FIXTURES / "ss" / "6.1.0-keepalive.inodes.txt").read_text().split())
    mine = parse_ss(text, inodes)
    assert mine.states == {"ESTAB": 4}  # every connection to the port, the idle stranger included
    assert mine.established == 3
    assert mine.cwnd_mean == 18.0  # the stranger's cwnd:10 is not ab's
    assert mine.rcv_space_mean == pytest.approx((134664 + 134416 + 134416) / 3, abs=0.001)
    assert mine.rtt_mean_ms == pytest.approx((0.017 + 0.015 + 0.016) / 3, abs=1e-6)
    everyone = parse_ss(text, None)
    assert everyone.established == 4 and everyone.cwnd_mean == pytest.approx((18 * 3 + 10) / 4)
    assert parse_ss("", inodes).cwnd_mean is None


def test_the_port_of_a_target_url():
    assert monitor.port_of("http://127.0.0.1:8080/x") == 8080
    assert monitor.port_of("http://example.invalid/") == 80
    assert monitor.port_of("https://example.invalid/") == 443
    assert monitor.port_of("http://127.0.0.1:99999/") is None
    assert monitor.port_of(None) is None


def test_a_single_threaded_tool_at_a_full_core_is_called_generator_bound(tmp_path):
    """A real busy loop of one thread: the finding is computed from real samples."""
    script = "i=0; while [ $i -lt 800000 ]; do i=$((i+1)); done"  # builtins only: one process
    running = LocalHost().start(["sh", "-c", script], cwd=tmp_path, stdout=tmp_path / "o", stderr=tmp_path / "e")
    mon = monitor.Monitor(0.5, None)
    mon.start(running.pid, running.started)
    completed = running.wait(30)
    cost = monitor.summarize(mon.stop(), wall_s=completed.wall_s, cpu_user_s=completed.cpu_user_s,
                             cpu_system_s=completed.cpu_system_s, tool="sh")
    flagged = any("runs on one thread" in n for n in cost.notes)
    assert cost.processes_peak == 1 and cost.threads_peak == 1
    assert flagged == (cost.cpu_peak_pct >= monitor.SELF_BOUND_PCT)
    assert cost.cpu_peak_pct > 20 and cost.cpu_mean_pct > 20  # a busy loop, even on a shared machine


def test_a_tool_that_hangs_idle_until_the_hard_limit_is_called_stuck(tmp_path):
    """Works a moment, then waits forever (as siege 4.0.7 sometimes does at the end of a -t run)."""
    script = "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done; sleep 60"
    running = LocalHost().start(["sh", "-c", script], cwd=tmp_path, stdout=tmp_path / "o", stderr=tmp_path / "e")
    mon = monitor.Monitor(0.2, None)
    mon.start(running.pid, running.started)
    completed = running.wait(2.5)
    cost = monitor.summarize(mon.stop(), wall_s=completed.wall_s, cpu_user_s=completed.cpu_user_s,
                             cpu_system_s=completed.cpu_system_s, tool="sh")
    assert completed.timed_out and cost.processes_peak == 2  # sh and its sleep
    assert any(n.startswith("sh used no CPU from ") and "stuck waiting" in n for n in cost.notes)
