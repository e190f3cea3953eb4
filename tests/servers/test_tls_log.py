"""The handshakes log of the bundled nginx, read by toolbench.servers.tls_log: lines written by the
real nginx for real clients (Python's ssl resuming a session by hand, h2load over HTTP/2), read from
an offset; what a cell's watch makes of it (run.serving.CellWatch); and the record it becomes."""
from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import urllib.parse
from pathlib import Path

import pytest

from toolbench.errors import SchemaError
from toolbench.record import codec
from toolbench.record.schema import Identity, Outcome, RunResult, Status, TlsHandshakes
from toolbench.run import serving
from toolbench.scenario import read as scenario_read
from toolbench.scenario.targets import TargetSpec
from toolbench.servers import tls_log
from toolbench.servers.nginx import nginx_static
from toolbench.servers.process import RunningTarget

ALL = frozenset({"http1", "https", "h2", "h2c"})
STORED = Path(__file__).parents[1] / "fixtures" / "stored"
pytestmark = pytest.mark.integration


def _get(target: RunningTarget, session: ssl.SSLSession | None = None) -> ssl.SSLSession:
    """One HTTP/1.1 request on a TLS connection of its own, resuming `session` when given; the
    session it ended with (its ticket arrives with the answer)."""
    parts = urllib.parse.urlsplit(target.url_for("https"))
    context = _context(target.ca_file)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=parts.hostname, session=session) as tls:
            tls.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            while tls.recv(65536):
                pass
            assert tls.session is not None
            return tls.session


_CONTEXTS: dict[str | None, ssl.SSLContext] = {}


def _context(ca_file: str | None) -> ssl.SSLContext:
    # One context: a session resumes only through the context that made it.
    if ca_file not in _CONTEXTS:
        context = ssl.create_default_context(cafile=ca_file)
        context.set_alpn_protocols(["http/1.1"])
        _CONTEXTS[ca_file] = context
    return _CONTEXTS[ca_file]


def _h2load(url: str, requests: int, clients: int) -> None:
    if shutil.which("h2load") is None:
        pytest.skip("h2load is not on PATH (scripts/install.sh installs nghttp2-client)")
    done = subprocess.run(["h2load", "-n", str(requests), "-c", str(clients), url + "/"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and f"{requests} succeeded" in done.stdout, done.stdout + done.stderr


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    with nginx_static(tmp_path_factory.mktemp("tls"), serve=ALL) as target:
        yield target


def test_full_and_resumed_handshakes_from_an_offset(served: RunningTarget) -> None:
    log = Path(served.handshake_log)
    assert log == Path(served.ca_file).parent / "handshakes.log"
    _get(served)  # before the offset: not counted
    start = tls_log.settled_size(log)
    first = _get(served)
    _get(served, first)
    _get(served, first)
    _h2load(served.url_for("h2"), requests=6, clients=2)  # two HTTP/2 connections, full handshakes
    found = tls_log.read(log, start, end=tls_log.settled_size(log))
    assert found is not None
    assert (found.connections, found.handshakes_full, found.handshakes_resumed) == (5, 3, 2)
    assert (found.http1_connections, found.http2_connections) == (3, 2)
    assert found.tls_version == "TLSv1.3" and found.cipher and found.cipher.startswith("TLS_")
    assert found.lines_unread == 0 and found.resumed_pct == 40.0


def test_the_probes_connections_are_left_out(served: RunningTarget) -> None:
    log = Path(served.handshake_log)
    start = tls_log.settled_size(log)
    session = _get(served)
    _get(served, session)
    end = tls_log.settled_size(log)
    # Two full HTTP/1.1 connections asked away: only the one there is goes, never below zero.
    found = tls_log.read(log, start, http2_probe=False, probe_connections=2, end=end)
    assert found is not None
    assert (found.connections, found.handshakes_full, found.handshakes_resumed, found.probe_connections) == (1, 0, 1, 1)
    # An HTTP/2 probe takes nothing from HTTP/1.1 connections.
    kept = tls_log.read(log, start, http2_probe=True, probe_connections=1, end=end)
    assert kept is not None and kept.connections == 2 and kept.probe_connections == 0


def test_lines_that_do_not_read_are_counted_never_interpreted(served: RunningTarget, tmp_path: Path) -> None:
    real = Path(served.handshake_log).read_bytes()
    assert real.endswith(b"\n") and real.count(b"\n") >= 1
    hostile = tmp_path / "handshakes.log"
    hostile.write_bytes(real + b"7 r TLSv1.3 <script> HTTP/1.1\n" + b"9" * 10_000 + b"\n"
                        + b"8 x TLSv1.3 TLS_AES_128_GCM_SHA256 HTTP/1.1\n" + real.splitlines(keepends=True)[0]
                        + b"10 . TLSv1.3 TLS_AES_1")  # a last line still being written
    found = tls_log.read(hostile, 0)
    assert found is not None
    assert found.lines_unread == 3 and found.connections == real.count(b"\n") + 1


def test_a_log_replaced_too_long_or_missing_reads_as_nothing(served: RunningTarget, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    log = Path(served.handshake_log)
    size = tls_log.size(log)
    assert size is not None and size > 0
    assert tls_log.read(log, size + 1) is None  # shorter than where the cell started: replaced
    assert tls_log.read(log, 0, end=size + 1) is None
    assert tls_log.read(tmp_path / "none.log", 0) is None and tls_log.size(tmp_path / "none.log") is None
    monkeypatch.setattr(tls_log, "MAX_BYTES", 10)
    assert tls_log.read(log, 0) is None


def _watch(target: RunningTarget, protocol: str, folder: Path) -> serving.CellWatch:
    path = folder / f"{protocol}.yaml"
    path.write_text(f"name: w\ntarget: {{url: '{target.base_url}'}}\nmatrix: {{tool: [ab], concurrency: [1]}}\n")
    return serving.CellWatch(scenario_read.load(path), TargetSpec(kind="nginx-static"), target,
                             folder / f"{protocol}-server.jsonl", protocol)


def test_a_cell_watch_reads_its_cells_handshakes_and_a_cell_in_clear_has_none(served: RunningTarget,
                                                                              tmp_path: Path) -> None:
    tls_watch, clear_watch = _watch(served, "https", tmp_path), _watch(served, "http1", tmp_path)
    tls_watch.start()
    clear_watch.start()
    session = _get(served)
    _get(served, session)
    tls_watch.stop()
    clear_watch.stop()
    found = tls_watch.handshakes(probe_requests=0)
    assert found is not None and (found.connections, found.handshakes_full, found.handshakes_resumed) == (2, 1, 1)
    assert clear_watch.handshakes() is None
    # A target that keeps no log (a URL, a command, one on another machine): none either.
    bare = RunningTarget(base_url=served.base_url, label="url", urls=served.urls, ca_file=served.ca_file)
    watch = _watch(bare, "h2", tmp_path)
    watch.start()
    watch.stop()
    assert watch.handshakes() is None


def test_the_record_round_trips_and_refuses_counts_that_do_not_add_up() -> None:
    tls = TlsHandshakes(connections=5, handshakes_full=3, handshakes_resumed=2, http1_connections=3,
                        http2_connections=2, tls_version="TLSv1.3", cipher="TLS_AES_256_GCM_SHA384", probe_connections=1)
    result = RunResult(Identity("s", "ab-c2-ka-https-rep1", "ab", protocol="https"), Outcome(Status.OK), tls=tls)
    again = RunResult.from_dict(result.to_dict())
    assert again.tls == tls and again == result
    assert RunResult.from_dict(RunResult(Identity("s", "c", "ab"), Outcome(Status.OK)).to_dict()).tls is None
    for wrong in ({"handshakes_full": 4}, {"connections": -1, "handshakes_full": -3}, {"http2_connections": 9},
                  {"connections": True}, {"lines_unread": 1.5}):
        data = result.to_dict()
        data["tls"].update(wrong)
        with pytest.raises(SchemaError, match="tls"):
            RunResult.from_dict(data)
    with pytest.raises(SchemaError, match="unknown fields"):
        codec.decode(TlsHandshakes, {**result.to_dict()["tls"], "extra": 1}, "tls")


def test_stored_runs_of_every_earlier_version_still_load_without_tls() -> None:
    from toolbench.record import store

    folders = [p for p in STORED.iterdir() if p.is_dir()]
    assert folders
    for folder in folders:
        results = store.RunDir.open(folder).results()
        assert results and all(r.tls is None for r in results), folder.name
        manifest = store.RunDir.open(folder).manifest()
        assert all(t.tls_version is None and t.tls_cipher is None for t in manifest.targets)
