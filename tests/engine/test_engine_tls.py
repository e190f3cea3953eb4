"""The engine over TLS (https), run through its adapter as `toolbench run` runs it, against a real
nginx: keep-alive on and off answered without failures; sessions resumed by default (nginx's
handshakes log says `r`), never with `tls_resume: false`; a CA that is not the server's fails the
cell with one line naming the TLS failure. Functional: nothing here is timed."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from toolbench.adapters.engine import ADAPTER
from toolbench.contract.adapter import Found, RawOutput
from toolbench.contract.cell import Cell
from toolbench.record.schema import Measurement
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec
from toolbench.servers import tls as certificate
from toolbench.servers.nginx import nginx_static
from toolbench.servers.process import RunningTarget

FOUND = Found(sys.executable, "test")


@pytest.fixture(scope="module")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTarget]:
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (scripts/install.sh installs it)")
    with nginx_static(tmp_path_factory.mktemp("nginx"), serve=frozenset({"http1", "https"})) as target:
        yield target


def handshakes(target: RunningTarget) -> list[list[str]]:
    """nginx's handshakes log: `conn reused proto cipher server_protocol`, one line per TLS connection."""
    assert target.ca_file is not None
    log = Path(target.ca_file).parent / "handshakes.log"
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def tls_cell(target: RunningTarget, keepalive: bool, ca_file: str | None = None, **options: object) -> Cell:
    return Cell(scenario="tls", tool="engine", concurrency=4, keepalive=keepalive, repetition=1,
                request=RequestSpec(), stop=StopSpec(duration_s=1.0), timeout_s=60.0, protocol="https",
                options=options or {}).at(target.url_for("https"), ca_file or target.ca_file)


def run_cell(cell: Cell, work: Path) -> tuple[Measurement, subprocess.CompletedProcess[str]]:
    """The adapter's command for `cell`, run in `work`, and its parse."""
    work.mkdir(parents=True, exist_ok=True)
    invocation = ADAPTER.build(cell, work, FOUND)
    for name, contents in invocation.files.items():
        (work / name).write_text(contents)
    proc = subprocess.run(invocation.argv + ["-w", "1"], cwd=work, capture_output=True, text=True, timeout=120)
    files = {role: work / name for role, name in invocation.outputs.items() if (work / name).exists()}
    raw = RawOutput(stdout=proc.stdout, stderr=proc.stderr, exit_code=proc.returncode, files=files, source="engine")
    return ADAPTER.parse(raw), proc


@pytest.mark.parametrize("keepalive", [True, False], ids=["ka", "close"])
def test_https_answers_every_request(nginx: RunningTarget, tmp_path: Path, keepalive: bool) -> None:
    before = len(handshakes(nginx))
    m, proc = run_cell(tls_cell(nginx, keepalive), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert m.counts.requests_ok and m.counts.requests_failed == 0 and m.counts.requests_total == m.counts.requests_ok
    assert m.url is not None and m.url.startswith("https://")
    assert any(n.startswith("engine_tls: HTTP/1.1 over TLS") for n in m.notes), m.notes
    lines = handshakes(nginx)[before:]
    assert lines and all(line[4] == "HTTP/1.1" and line[2].startswith("TLSv1") for line in lines)
    if keepalive:
        assert len(lines) <= m.counts.requests_ok  # connections reused, not one per request
    else:
        assert len(lines) >= m.counts.requests_ok  # one connection per request


def test_keepalive_off_resumes_sessions_by_default(nginx: RunningTarget, tmp_path: Path) -> None:
    before = len(handshakes(nginx))
    m, proc = run_cell(tls_cell(nginx, False), tmp_path)
    assert proc.returncode == 0 and m.counts.requests_failed == 0, proc.stderr
    reused = [line[1] for line in handshakes(nginx)[before:]]
    # Each of the 4 slots makes its first connection with a full handshake, and resumes after it.
    assert len(reused) > 8 and reused.count("r") >= len(reused) - 4, reused
    assert any("of them resumed a session" in n for n in m.notes), m.notes


def test_resumption_off_makes_a_full_handshake_on_every_connection(nginx: RunningTarget, tmp_path: Path) -> None:
    cell = tls_cell(nginx, False, tls_resume=False)
    assert "--tls-no-resume" in ADAPTER.build(cell, tmp_path, FOUND).argv
    before = len(handshakes(nginx))
    m, proc = run_cell(cell, tmp_path)
    assert proc.returncode == 0 and m.counts.requests_ok and m.counts.requests_failed == 0, proc.stderr
    reused = [line[1] for line in handshakes(nginx)[before:]]
    assert reused and set(reused) == {"."}, reused
    assert any("session resumption off" in n for n in m.notes), m.notes


@pytest.mark.parametrize("keepalive", [True, False], ids=["ka", "close"])
def test_a_ca_that_is_not_the_servers_fails_with_one_tls_line(nginx: RunningTarget, tmp_path: Path,
                                                               keepalive: bool) -> None:
    other = certificate.make(tmp_path / "other", "127.0.0.1")  # a CA, valid, of another server
    m, proc = run_cell(tls_cell(nginx, keepalive, ca_file=str(other.cert)), tmp_path / "run")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "TLS handshake" in lines[0] and "certificate" in lines[0], proc.stderr
    assert m.counts.requests_ok in (None, 0)
    assert any("TLS handshake" in n and "--cacert" in n for n in m.notes), m.notes


def test_build_passes_the_cells_ca_and_refuses_http2_with_the_reason(tmp_path: Path) -> None:
    cell = Cell(scenario="s", tool="engine", concurrency=2, keepalive=True, repetition=1, request=RequestSpec(),
                stop=StopSpec(duration_s=1.0), timeout_s=60.0, protocol="https",
                url="https://127.0.0.1:8443/", ca_file="/run/x/tls/cert.pem")
    argv = ADAPTER.build(cell, tmp_path, FOUND).argv
    assert ["--cacert", "/run/x/tls/cert.pem"] == argv[argv.index("--cacert"):][:2] and "--tls-no-resume" not in argv
    assert ADAPTER.protocol_support("https").ok and ADAPTER.protocol_support("http1").ok
    for protocol in ("h2", "h2c"):
        support = ADAPTER.protocol_support(protocol)
        assert not support.ok and "HTTP/1.1 only" in support.reason and "one request in flight" in support.reason
