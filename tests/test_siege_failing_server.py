"""Real siege against a loopback server that answers every request 503: with toolbench's siegerc
it ends by itself. With `failures` unbounded, siege 4.0.7's timed runs hung here (2 in 5 at
-c 100 -t 2S): its timer cancels threads that are failing fast, and a cancelled thread can
leave glibc's malloc lock held (see adapters/siege.py). With the bound, siege 4.0.7 instead
crashes now and then (SIGSEGV in libc as its threads leave: 3 runs in 12 here); such a run
must end in a ParseError naming the signal, never in a hang or in figures."""
import http.server
import subprocess
import threading
from pathlib import Path
from typing import Iterator

import pytest

from conftest import need
from toolbench.adapter import Found, RawOutput
from toolbench.adapters import siege
from toolbench.errors import ParseError
from toolbench.hosts import LocalHost
from toolbench.plan import Cell
from toolbench.scenario import RequestSpec, StopSpec

pytestmark = pytest.mark.integration
RUNS = 4
LIMIT_S = 30  # far beyond a 2 s run; a hung siege blocks SIGTERM, so it gets SIGKILL


class Busy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(503)
        self.send_header("Content-Length", "4")
        self.end_headers()
        self.wfile.write(b"busy")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def busy() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Busy)
    server.request_queue_size = 1024
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_siege_ends_by_itself_against_a_server_answering_503(busy: str, tmp_path: Path):
    need("siege")
    cell = Cell(scenario="s", tool="siege", concurrency=100, keepalive=False, repetition=1, request=RequestSpec(),
                stop=StopSpec(duration_s=2), timeout_s=LIMIT_S, url=busy)
    found = siege.ADAPTER.detect(LocalHost())
    assert isinstance(found, Found), found
    inv = siege.ADAPTER.build(cell, tmp_path, found)
    for name, text in inv.files.items():
        (tmp_path / name).write_text(text)
    assert "failures = 1024" in inv.files["siegerc"]
    for _ in range(RUNS):
        try:
            done = subprocess.run(inv.argv, cwd=tmp_path, capture_output=True, text=True, timeout=LIMIT_S)
        except subprocess.TimeoutExpired:  # subprocess.run kills it (SIGKILL) before raising
            pytest.fail(f"siege did not end within {LIMIT_S} s against a server answering 503")
        raw = RawOutput(stdout=done.stdout, stderr=done.stderr, exit_code=done.returncode)
        if done.returncode < 0:
            with pytest.raises(ParseError, match="killed by SIG"):
                siege.parse(raw)
            continue
        m = siege.parse(raw)
        assert m.counts.requests_ok == 0 and m.counts.requests_failed
        assert m.siege is not None and m.siege.availability_pct == 0
