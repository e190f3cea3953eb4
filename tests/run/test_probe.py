"""The probe: requests timed by toolbench, against a real nginx, under a real ab load."""
import socket
import statistics
import threading

import pytest

from conftest import need
from toolbench.adapters import ab as ab_adapter
from toolbench.contract.adapter import RawOutput
from toolbench.contract.host import free_port
from toolbench.hosts.local import LocalHost
from toolbench.record.schema import Latency, Percentiles
from toolbench.run import probe
from toolbench.scenario.observation import ProbeSpec
from toolbench.scenario.request import RequestSpec


@pytest.mark.integration
def test_the_probe_times_the_server_under_an_ab_load(tmp_path, nginx):
    need("ab")
    target = probe.ProbeTarget.of(nginx.base_url + "/", RequestSpec())
    base = probe.baseline(target, 20, timeout_s=5)
    assert len(base.latencies_ms) == 20 and base.failures == 0
    running = LocalHost().start(["ab", "-c", "8", "-t", "2", "-n", "1000000", nginx.base_url + "/"],
                                cwd=tmp_path, stdout=tmp_path / "o", stderr=tmp_path / "e")
    prb = probe.Probe(target, 0.1, timeout_s=5)
    prb.start(running.started)
    completed = running.wait(30)
    during = prb.stop()
    assert completed.exit_code == 0
    assert len(during.latencies_ms) >= 10 and during.failures == 0
    assert during.offsets_s == sorted(during.offsets_s) and during.offsets_s[0] >= 0.1
    assert all(v > 0 for v in during.latencies_ms)
    measured = ab_adapter.parse(RawOutput(stdout=(tmp_path / "o").read_text()))
    spec = ProbeSpec(interval_s=0.1)
    s = probe.summarize(base, during, measured.latency, spec, tool="ab")
    assert s.p50_ms == pytest.approx(statistics.median(during.latencies_ms), abs=1e-3)
    assert s.baseline_p50_ms == pytest.approx(statistics.median(base.latencies_ms), abs=1e-3)
    assert s.slowdown == pytest.approx(s.p50_ms / s.baseline_p50_ms, rel=0.01)
    assert s.server_bound == (s.p50_ms > max(3 * s.baseline_p50_ms, s.baseline_p50_ms + 1.0))
    assert any(("slowed down first" if s.server_bound else "stayed near its baseline") in f for f in s.findings)
    assert s.tool_metric == "p50_ms" and s.tool_ms == measured.latency.percentiles.p50_ms
    assert s.tool_disagrees is not None
    assert any("ab's median" in f for f in s.findings) == s.tool_disagrees


def test_a_refused_target_is_counted_and_found_never_raised():
    port = free_port()  # bound then released: nothing listens there
    target = probe.ProbeTarget(url=f"http://127.0.0.1:{port}/")
    base = probe.baseline(target, 20, timeout_s=2)
    assert base.latencies_ms == [] and base.failures == 3  # gave up early, did not try 20 times
    assert base.errors == ["connection refused"]
    prb = probe.Probe(target, 0.05, timeout_s=2)
    prb.start()
    threading.Event().wait(0.4)
    during = prb.stop()
    assert during.failures >= 2 and during.latencies_ms == []
    s = probe.summarize(base, during, Latency(mean_ms=3.0), ProbeSpec(interval_s=0.05))
    assert s.p50_ms is None and s.server_bound is None and s.tool_disagrees is None
    assert any("could not reach the target before the load (connection refused)" in f for f in s.findings)
    assert any(f"{during.failures} of {during.failures} probe requests during the load failed" in f
               for f in s.findings)


class Silent:
    """Accepts connections and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.mark.timeout(20)
def test_stopping_aborts_a_request_in_flight_and_does_not_count_it():
    silent = Silent()
    try:
        target = probe.ProbeTarget(url=f"http://127.0.0.1:{silent.port}/")
        base = probe.baseline(target, 20, timeout_s=0.3)
        assert base.failures == 1 and base.errors == ["no answer within 0.3s"]  # one unanswered try ends it
        prb = probe.Probe(target, 0.05, timeout_s=60)  # would hang a minute without the abort
        prb.start()
        threading.Event().wait(0.3)
        during = prb.stop()
    finally:
        silent.close()
    assert during.failures == 0 and during.latencies_ms == []


# The rules, over figures measured on this machine (quickstart, ab -k -c 50 against nginx-static).
BASE = probe.Samples(latencies_ms=[0.185, 0.17, 0.19, 0.2, 0.18])
LOADED = probe.Samples(latencies_ms=[1.765, 1.2, 2.4, 1.9, 1.5], offsets_s=[0.25, 0.5, 0.75, 1.0, 1.25])


def test_a_probe_far_above_its_baseline_means_the_server_slowed_down():
    s = probe.summarize(BASE, LOADED, None, ProbeSpec())
    assert s.p50_ms == 1.765 and s.baseline_p50_ms == 0.185 and s.slowdown == pytest.approx(9.54, abs=0.01)
    assert s.server_bound is True
    assert "the server slowed down first" in s.findings[0]
    # The same ratio on a sub-millisecond scale is noise: the absolute floor keeps it quiet.
    small = probe.Samples(latencies_ms=[0.6, 0.7, 0.72])
    assert probe.summarize(BASE, small, None, ProbeSpec()).server_bound is False


def test_the_tool_figure_is_compared_with_the_probe_within_a_tolerance():
    spec = ProbeSpec()
    low = probe.summarize(BASE, LOADED, Latency(percentiles=Percentiles(p50_ms=0.522)), spec, tool="ab")
    assert low.tool_disagrees is True and low.tool_metric == "p50_ms"
    assert any("ab's median (0.522 ms) is 3.4x below the probe's" in f for f in low.findings)
    near = probe.summarize(BASE, LOADED, Latency(mean_ms=1.158), spec, tool="ab")
    assert near.tool_disagrees is False and near.tool_metric == "mean_ms"
    high = probe.summarize(BASE, LOADED, Latency(mean_ms=12.0), spec, tool="ab")
    assert high.tool_disagrees is True
    assert any("6.8x the probe's" in f and "inside the tool" in f for f in high.findings)


def test_a_rounded_zero_or_a_missing_latency_is_a_finding_not_a_disagreement():
    siege = Latency(mean_ms=0.0, resolution_ms=10.0)
    s = probe.summarize(BASE, LOADED, siege, ProbeSpec(), tool="siege")
    assert s.tool_disagrees is False
    assert any("siege reports a mean of 0 ms, below its resolution of 10 ms" in f for f in s.findings)
    missing = probe.summarize(BASE, LOADED, Latency(), ProbeSpec(), tool="http_load")
    assert missing.tool_ms is None and missing.tool_disagrees is None
    assert any("http_load reports no latency; the probe measured a median of 1.76 ms" in f
               for f in missing.findings)


def test_a_run_shorter_than_the_interval_has_no_sample_and_says_so():
    s = probe.summarize(BASE, probe.Samples(), Latency(mean_ms=1.0), ProbeSpec(interval_s=0.25))
    assert s.p50_ms is None and s.server_bound is None
    assert any("shorter than the probe interval of 0.25s" in f for f in s.findings)


SCENARIO = """\
name: p
target: {server: nginx-static}
matrix: {tool: [ab]}
probe: {interval: 100ms, baseline: 5, timeout: 2s, slowdown: 4, slowdown_floor: 2ms, tolerance: 2.5,
        tolerance_floor: 500ms}
monitor: {interval: 250ms}
"""


def test_the_probe_and_monitor_settings_come_from_the_scenario(tmp_path):
    from toolbench.errors import ScenarioError
    from toolbench.scenario import read as scenario

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    s = scenario.load(path)
    assert s.probe == ProbeSpec(enabled=True, interval_s=0.1, baseline_requests=5, timeout_s=2.0,
                                slowdown_factor=4.0, slowdown_floor_ms=2.0, tolerance=2.5, tolerance_ms=500.0)
    assert s.monitor.interval_s == 0.25 and s.monitor.enabled and s.probe.interval_s == 0.1
    path.write_text(SCENARIO.replace("monitor: {interval: 250ms}", "monitor: {enabled: false}"))
    assert scenario.load(path).monitor.enabled is False
    path.write_text("name: p\ntarget: {server: nginx-static}\nmatrix: {tool: [ab]}\n")
    assert scenario.load(path).probe == ProbeSpec() and scenario.load(path).monitor.interval_s == 1.0
    path.write_text(SCENARIO.replace("tolerance: 2.5", "tolerance: 0.5"))
    with pytest.raises(ScenarioError, match=r"s.yaml:4: probe.tolerance: expected a factor of at least 1"):
        scenario.load(path)
    path.write_text(SCENARIO.replace("baseline: 5", "baseline: many"))
    with pytest.raises(ScenarioError, match=r"s.yaml:4: probe.baseline: expected a positive integer"):
        scenario.load(path)
