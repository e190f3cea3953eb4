"""A listen-queue overflow provoked and recorded: a server of the scenario's own (a `command:`
target) listens with a backlog of 1 and accepts one connection at a time, slowly; ab at c=200
for 2 s fills its accept queue, and the kernel drops the SYNs beyond it. The cell's network
counters (RunResult.network, toolbench.hosts.netcounters) show the overflows, the report says
so in a sentence, and a claim comparing the two targets gives them as its evidence; a plain
nginx cell of the same run has its counters too.

The counters are the machine's, and other tests may run beside this one: the provoked cell is
held to overflows > 0, the quiet one only to what toolbench guarantees (every counter read,
whole, not negative), never to 0."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conftest import need
from toolbench.contract.host import free_port
from toolbench.record import store
from toolbench.record.observed import NetworkCounters
from toolbench.report import claims_check, network, render
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration

# Accepts one connection at a time, answers it after 50 ms: about 20 a second, whatever comes.
# It ends by itself after LIFETIME_S should nothing stop it.
SLOW_SERVER = """\
import socket, sys, time
REPLY = b"HTTP/1.0 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nhi"
LIFETIME_S = 120
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
s.settimeout(1.0)
ends = time.monotonic() + LIFETIME_S
while time.monotonic() < ends:
    try:
        conn, _ = s.accept()
    except socket.timeout:
        continue
    try:
        conn.settimeout(2.0)
        conn.recv(1024)
        time.sleep(0.05)
        conn.sendall(REPLY)
    except OSError:
        pass
    finally:
        conn.close()
"""
COUNTERS = ("listen_overflows", "listen_drops", "syn_retransmits", "resets_sent", "resets_received")


def test_a_tiny_backlog_overflows_and_the_cell_records_it(tmp_path: Path) -> None:
    need("ab")
    need("nginx")
    port = free_port()
    server = tmp_path / "slow_server.py"
    server.write_text(SLOW_SERVER)
    path = tmp_path / "overflow.yaml"
    path.write_text(f"""\
name: overflow
compare: targets
targets:
  slow:
    command: "{sys.executable} {server} {port}"
    url: "http://127.0.0.1:{port}"
    ready: {{path: /, timeout: 10s}}
    label: one at a time
  nginx: {{server: nginx-static, workers: 1}}
request: {{path: /}}
matrix: {{tool: [ab], concurrency: [200], keepalive: [false]}}
stop: {{duration: 2s}}
timeout: 30s
probe: {{enabled: false}}
monitor: {{interval: 500ms}}
prerequisites:
  ulimit: {{nofile: 4096}}
claims:
  - claim: nginx serves more than a server that takes one connection at a time
    higher: {{target: nginx}}
    lower: {{target: slow}}
""")
    loaded = scenario.load(path)
    summary = runner.run(loaded, tmp_path / "reports", allow_commands=True)
    run_dir = store.RunDir.open(summary.run_dir)
    # Each result carries its target's label (its name when it has none), which the claim below,
    # naming the target as the scenario does, selects by.
    results = {r.identity.target_label: r for r in run_dir.results()}
    assert set(results) == {"one at a time", "nginx"}

    slow = results["one at a time"]
    (counters,) = slow.network  # one machine for the target and the generator: one set, not two
    assert counters.machine == "both"
    assert counters.listen_overflows is not None and counters.listen_overflows > 0
    assert counters.listen_drops is not None and counters.listen_drops >= counters.listen_overflows
    assert counters.syn_retransmits is not None and counters.syn_retransmits >= 0
    assert counters.time_wait_at_end is not None
    # Its monitor saw the queue hold what a backlog of 1 lets wait (the kernel allows one more).
    assert counters.accept_queue_peak is not None and counters.accept_queue_peak >= 1

    quiet = results["nginx"]
    (plain,) = quiet.network
    assert isinstance(plain, NetworkCounters) and plain.machine == "both"
    for name in COUNTERS:
        value = getattr(plain, name)
        assert isinstance(value, int) and value >= 0, name
    assert plain.time_wait_at_end is not None and plain.accept_queue_peak is not None

    # The claim's evidence names the overflows, with the slow server's count as its cell recorded it.
    (checked,) = claims_check.check_all(loaded.claims, run_dir.results())
    assert checked.verdict is not claims_check.Verdict.NOT_MEASURED, checked.ours
    overflows = re.search(r"listen overflows: nginx [\d,]+ vs one at a time ([\d,]+)", checked.evidence)
    assert overflows and int(overflows[1].replace(",", "")) == counters.listen_overflows, checked.evidence

    # The report shows the counters, and says what the overflows mean.
    said = network.sentence(slow)
    assert said is not None and said.startswith("c=200 (ab, ") and "the listen queue overflowed" in said
    page, data = render.render_with_data([summary.run_dir], tmp_path / "report.html")
    (section,) = [s for s in data.sections if s.id == "network"]
    assert said in section.points
    assert len(section.tables[0].rows) == 2
    assert "Network counters" in page.read_text()
