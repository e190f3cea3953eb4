"""The probe speaks the cell's protocol against the real nginx: HTTP/1.1 over TLS trusting the
target's own certificate, HTTP/2 over TLS by ALPN, HTTP/2 in clear by prior knowledge (each seen
in nginx's handshakes log, or answered on the h2c port that speaks nothing else); without the h2
package a cell in h2 or h2c has no probe, and says why. The manifest's TLS version and cipher come
from one handshake of toolbench's own."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from toolbench.contract.cell import Cell
from toolbench.run import probe, probe_h2, serving
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec
from toolbench.scenario.targets import TargetSpec
from toolbench.servers import tls_log
from toolbench.servers.nginx import nginx_static
from toolbench.servers.process import RunningTarget

pytestmark = pytest.mark.integration
ALL = frozenset({"http1", "https", "h2", "h2c"})


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    with nginx_static(tmp_path_factory.mktemp("probe-tls"), serve=ALL) as target:
        yield target


def _target(served: RunningTarget, protocol: str, ca_file: str | None = "given") -> probe.ProbeTarget:
    return probe.ProbeTarget.of(served.url_for(protocol) + "/", RequestSpec(), protocol,
                                served.ca_file if ca_file == "given" else ca_file)


def _logged(served: RunningTarget, protocol: str, count: int):
    log = Path(served.handshake_log)
    start = tls_log.settled_size(log)
    samples = probe.baseline(_target(served, protocol), count, timeout_s=10)
    return samples, tls_log.read(log, start, end=tls_log.settled_size(log))


@pytest.mark.parametrize("protocol, http1, http2", [("https", 3, 0), ("h2", 0, 3)])
def test_the_probe_over_tls_trusts_the_targets_certificate_and_speaks_the_cells_http(served, protocol, http1, http2):
    samples, logged = _logged(served, protocol, 3)
    assert samples.failures == 0 and len(samples.latencies_ms) == 3, samples.errors
    assert logged is not None
    # A fresh connection per request, none resuming a session: a full handshake each.
    assert (logged.connections, logged.handshakes_full, logged.http1_connections, logged.http2_connections) == (
        3, 3, http1, http2)


def test_the_probe_speaks_h2c_where_http1_gets_no_answer(served):
    samples = probe.baseline(_target(served, "h2c"), 2, timeout_s=10)
    assert samples.failures == 0 and len(samples.latencies_ms) == 2, samples.errors
    as_http1 = probe.ProbeTarget.of(served.url_for("h2c") + "/", RequestSpec(), "http1")
    refused = probe.baseline(as_http1, 1, timeout_s=5)
    assert refused.failures == 1 and not refused.latencies_ms  # the h2c port speaks only HTTP/2


def test_a_certificate_not_trusted_fails_the_probe_in_words(served, tmp_path):
    samples = probe.baseline(_target(served, "https", ca_file=None), 1, timeout_s=5)
    assert samples.failures == 1 and samples.errors[0].startswith("TLS: "), samples.errors
    missing = probe.baseline(_target(served, "https", ca_file=str(tmp_path / "none.pem")), 1, timeout_s=5)
    assert missing.failures == 1 and "does not load" in missing.errors[0], missing.errors


def test_a_running_probe_over_h2_is_stopped(served):
    running = probe.Probe(_target(served, "h2"), interval_s=0.05, timeout_s=5)
    running.start()
    time.sleep(0.5)
    samples = running.stop()
    assert samples.latencies_ms and samples.failures == 0, samples.errors


def _cell(protocol: str, url: str, ca_file: str | None = None) -> Cell:
    return Cell(scenario="s", tool="h2load", concurrency=1, keepalive=True, repetition=1, request=RequestSpec(),
                stop=StopSpec(duration_s=1.0), timeout_s=10.0, url=url, protocol=protocol, ca_file=ca_file)


def test_without_the_h2_package_an_h2_cell_has_no_probe_and_says_why(monkeypatch):
    assert probe.ProbeTarget.for_cell(_cell("h2", "https://127.0.0.1:1/", "/x.pem")).speakable
    monkeypatch.setattr(probe_h2, "H2Connection", None)
    for protocol in ("h2", "h2c"):
        target = probe.ProbeTarget.for_cell(_cell(protocol, "http://127.0.0.1:1/"))
        assert not target.speakable and "h2 package" in (target.unspoken or "")
    https = probe.ProbeTarget.for_cell(_cell("https", "https://127.0.0.1:1/", "/x.pem"))
    assert https.speakable and https.unspoken is None and https.ca_file == "/x.pem"


def test_the_manifest_records_the_tls_the_target_serves(served):
    found = serving.served_tls(served)
    assert found is not None and found[0] == "TLSv1.3" and found[1].startswith("TLS_")
    entry = serving.manifest_entry("t", TargetSpec(kind="nginx-static"), served)
    assert (entry.tls_version, entry.tls_cipher) == found
    plain = RunningTarget(base_url=served.base_url, label="plain")
    assert serving.served_tls(plain) is None
    untrusted = RunningTarget(base_url=served.base_url, label="x", urls=served.urls, ca_file=None)
    assert serving.served_tls(untrusted) is None  # not trusted: not recorded, never a guess
    assert serving.manifest_entry("t", TargetSpec(kind="nginx-static"), None, "did not start").tls_version is None
