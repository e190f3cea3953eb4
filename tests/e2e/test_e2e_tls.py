"""TLS and HTTP/2 end to end, as a user runs it: `toolbench run` of h2load in all four protocols
and ab over TLS without keep-alive against the bundled nginx, 1 s a cell, then `toolbench report`.
Each TLS cell records its handshakes from nginx's own log (the probe's left out), a cell in clear
none; the probe speaks each cell's protocol; the manifest says what TLS the target served; the
report has its TLS section."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers.cli import cli
from toolbench.contract import registry
from toolbench.record import store
from toolbench.record.schema import Status

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(any(shutil.which(t) is None for t in ("ab", "h2load", "nginx")),
                                 reason="ab, h2load or nginx is not installed (scripts/install.sh installs them)")]

SCENARIO = """\
name: tls-e2e
target: {server: nginx-static}
matrix:
  tool: [h2load, ab]
  concurrency: [2]
  keepalive: [true, false]
  protocol: [http1, https, h2, h2c]
stop: {duration: 1s}
repeat: 1
cooldown: 0s
order: as-written
placement: none
calibrate: false
probe: {interval: 200ms, baseline: 3}
disturbed: none
"""
RAN = {"h2load-c2-ka-rep1", "h2load-c2-ka-https-rep1", "h2load-c2-ka-h2-rep1", "h2load-c2-ka-h2c-rep1",
       "ab-c2-ka-rep1", "ab-c2-ka-https-rep1", "ab-c2-close-rep1", "ab-c2-close-https-rep1"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tls-e2e")
    (folder / "s.yaml").write_text(SCENARIO)
    done = cli("run", str(folder / "s.yaml"), "--reports-dir", str(folder / "reports"), "--json",
               "--no-system-check", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return Path(json.loads(done.stdout)["run_dir"])


def test_every_cell_a_tool_and_the_target_speak_runs_ok(run_dir: Path) -> None:
    results = {r.identity.cell_id: r for r in store.RunDir.open(run_dir).results()}
    ran = {cid: r for cid, r in results.items() if r.outcome.status is not Status.UNSUPPORTED}
    assert set(ran) == RAN, sorted(results)
    for cid, r in ran.items():
        assert r.outcome.status is Status.OK, (cid, r.outcome.error)
        assert r.measurement.counts.requests_ok == r.measurement.counts.requests_total > 0, cid


def test_tls_cells_record_their_handshakes_and_cells_in_clear_none(run_dir: Path) -> None:
    results = {r.identity.cell_id: r for r in store.RunDir.open(run_dir).results()}
    for cid in RAN:
        r = results[cid]
        if r.identity.protocol in ("http1", "h2c"):
            assert r.tls is None, cid
            continue
        t = r.tls
        assert t is not None and t.tls_version == "TLSv1.3" and t.cipher, cid
        assert t.handshakes_full + t.handshakes_resumed == t.connections >= 1, cid
        assert r.probe is not None and t.probe_connections <= len(r.probe.samples_ms), cid
        over = t.http2_connections if r.identity.protocol == "h2" else t.http1_connections
        assert over == t.connections, (cid, t)
    # Without keep-alive ab opens a connection per request; one per client may be cut at the end, and
    # the probe's request in flight when the cell ended is aborted, uncounted, though nginx may log it.
    closing = results["ab-c2-close-https-rep1"]
    requests = closing.measurement.counts.requests_total
    assert closing.tls is not None and requests is not None
    assert requests <= closing.tls.connections <= requests + closing.identity.concurrency + 1


def test_the_probe_speaks_each_cells_protocol(run_dir: Path) -> None:
    for r in store.RunDir.open(run_dir).results():
        if r.identity.cell_id in RAN:
            assert r.probe is not None and r.probe.baseline_failures == 0, (r.identity.cell_id, r.probe)
            assert len(r.probe.baseline_ms) == 3 and r.probe.failures == 0, r.identity.cell_id


def test_the_manifest_and_the_report_say_what_tls_was_served(run_dir: Path) -> None:
    (target,) = store.RunDir.open(run_dir).manifest().targets
    assert target.tls_version == "TLSv1.3" and target.tls_cipher and target.tls_cipher.startswith("TLS_")
    done = cli("report", str(run_dir), "-o", str(run_dir / "tls-report.html"))
    assert done.returncode == 0, done.stdout + done.stderr
    html = (run_dir / "tls-report.html").read_text()
    assert 'id="tls"' in html and "TLS handshakes" in html
    assert "ab paid a full handshake per connection" in html
    assert "HTTP/2 over TLS" in html and "HTTP/2 in clear (prior knowledge)" in html


def test_a_tls_cell_of_a_tool_that_never_checks_the_certificate_says_so_and_plain_cells_do_not(run_dir: Path) -> None:
    results = {r.identity.cell_id: r for r in store.RunDir.open(run_dir).results()}
    # Said once: by the tool's parse (ab and h2load print their TLS lines), else by the adapter's TLS_TRUST.
    for cid in ("h2load-c2-ka-https-rep1", "h2load-c2-ka-h2-rep1", "ab-c2-ka-https-rep1"):
        said = [n for n in results[cid].all_notes if "certificate" in n]
        assert len(said) == 1 and "not check" in said[0], cid
    assert "never checks" in registry.get("h2load").TLS_TRUST
    for cid in ("ab-c2-ka-rep1", "h2load-c2-ka-h2c-rep1"):
        assert not any("certificate" in n for n in results[cid].all_notes), cid
