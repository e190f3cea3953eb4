"""The kernel's network counters (toolbench.hosts.netcounters), read from this machine's real
/proc files: the strict parse, the deltas over a window, the listening socket's queue, the
record (NetworkCounters) and its invariants, and the read through the Host interface (here
and over a real SSH login)."""
from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest

from toolbench.contract.host import free_port
from toolbench.errors import HostError, SchemaError
from toolbench.hosts import netcounters
from toolbench.hosts.local import LocalHost
from toolbench.record.observed import NetworkCounters
from toolbench.record.schema import Identity, Outcome, RunResult, Status

COUNTERS = [name for name, _, _ in netcounters.COUNTERS]


def proc_text() -> str:
    return "".join(Path(name).read_text() for name in netcounters.NETSTAT_FILES)


def test_the_real_proc_files_parse_into_their_groups() -> None:
    groups = netcounters.parse_pairs(proc_text())
    assert {"TcpExt", "Tcp", "Ip", "IpExt"} <= set(groups)
    for _, group, counter in netcounters.COUNTERS:
        assert groups[group][counter] >= 0, (group, counter)
    assert groups["Tcp"]["MaxConn"] == -1  # the one signed value Linux writes there: read, not refused


def test_a_snapshot_of_this_machine_has_every_counter_and_the_time_wait_count() -> None:
    snap = netcounters.read_here()
    assert set(snap.counters) == set(COUNTERS)
    assert all(isinstance(v, int) and v >= 0 for v in snap.counters.values())
    assert isinstance(snap.time_wait, int) and snap.time_wait >= 0
    # The same figure as sockstat's own TCP line, read independently.
    line = next(l for l in Path("/proc/net/sockstat").read_text().splitlines() if l.startswith("TCP:"))
    words = line.split()[1:]
    assert "tw" in words


def test_deltas_over_a_window_with_connections_are_whole_and_not_negative() -> None:
    start = netcounters.read_here()
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                conn, _ = server.accept()
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                conn.close()  # linger 0: a reset sent
    end = netcounters.read_here()
    found = netcounters.delta("both", start, end, accept_queue_peak=0)
    assert found.machine == "both" and found.accept_queue_peak == 0
    for name in COUNTERS:
        assert isinstance(getattr(found, name), int) and getattr(found, name) >= 0, name
    assert found.resets_sent >= 3  # machine-wide: others' resets may add, never take away


def test_a_counter_that_went_back_gives_no_delta() -> None:
    later = netcounters.read_here()
    earlier = netcounters.Snapshot({**later.counters, "listen_overflows": later.counters["listen_overflows"] + 5},
                                   later.time_wait)
    found = netcounters.delta("target", earlier, later)
    assert found.listen_overflows is None  # absent, not 0
    assert found.listen_drops == 0 and found.accept_queue_peak is None


@pytest.mark.parametrize("change, why", [
    (lambda lines: lines[:-1], "names without its values"),
    (lambda lines: [lines[0], lines[3]] + lines[2:], "not a pair"),
    (lambda lines: [lines[0], lines[1] + " 7"] + lines[2:], "differ in number"),
    (lambda lines: [lines[0], lines[1].replace(" 0", " x", 1)] + lines[2:], "not a pair"),
    (lambda lines: lines + lines[:2], "given twice"),
    (lambda lines: [lines[0] + " ", lines[1]] + lines[2:], "not a pair"),
])
def test_anything_but_the_kernels_layout_is_refused_whole(change, why: str) -> None:
    lines = Path("/proc/net/snmp").read_text().splitlines()
    assert " 0" in lines[1] or pytest.skip("no zero in the first values line to spoil")
    with pytest.raises(netcounters.CountersUnreadable, match=why):
        netcounters.parse_pairs("\n".join(change(lines)) + "\n")


def test_a_huge_input_is_refused_before_it_is_read() -> None:
    with pytest.raises(netcounters.CountersUnreadable, match="more than /proc writes"):
        netcounters.parse_pairs("Tcp: A\nTcp: 1\n" * (netcounters.MAX_BYTES // 10))


def test_time_wait_from_sockstat() -> None:
    assert netcounters.parse_time_wait(Path("/proc/net/sockstat").read_text()) is not None
    assert netcounters.parse_time_wait("TCP: inuse 3 orphan 0 tw 812 alloc 7 mem 1\n") == 812
    assert netcounters.parse_time_wait("sockets: used 3\n") is None
    assert netcounters.parse_time_wait("TCP: inuse 3 tw -1\n") is None  # not the kernel's line


def test_a_counter_this_kernel_lacks_is_absent() -> None:
    text = "TcpExt: ListenOverflows ListenDrops\nTcpExt: 4 4\nTcp: OutRsts\nTcp: 9\n"
    snap = netcounters.snapshot(text, None)
    assert snap.counters == {"listen_overflows": 4, "listen_drops": 4, "syn_retransmits": None,
                             "resets_sent": 9, "resets_received": None}
    assert snap.time_wait is None


def test_the_listening_sockets_queue_is_its_unaccepted_connections() -> None:
    with socket.create_server(("127.0.0.1", 0), backlog=8) as server:
        port = server.getsockname()[1]
        clients = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(3)]
        try:
            waiting = None
            for _ in range(50):  # the last handshake's ACK may reach the queue a moment after connect()
                waiting, cpu_s = netcounters.listen_queue(port)
                if waiting == 3:
                    break
                time.sleep(0.02)
            assert waiting == 3 and cpu_s >= 0
        finally:
            for c in clients:
                c.close()
    assert netcounters.listen_queue(free_port())[0] is None  # nothing listens: no queue, not 0


def test_the_same_read_through_the_host_interface() -> None:
    snap = netcounters.read_on(LocalHost())
    assert set(snap.counters) == set(COUNTERS) and snap.time_wait is not None


def test_a_machine_that_cannot_be_read_costs_its_figures_only() -> None:
    def broken() -> netcounters.Snapshot:
        raise HostError("gen1: cat: no answer within 10s")

    counters = netcounters.MachineCounters("generator", broken)
    counters.start()
    counters.stop()
    assert counters.result() is None
    assert counters.problem == "the generator machine's network counters are absent: gen1: cat: no answer within 10s"


def test_the_record_holds_its_invariants_and_round_trips() -> None:
    with pytest.raises(SchemaError, match="network.listen_overflows: -1 is negative"):
        NetworkCounters("target", listen_overflows=-1)
    with pytest.raises(SchemaError, match="network.machine"):
        NetworkCounters("router")
    with pytest.raises(SchemaError, match="not a whole number"):
        NetworkCounters("both", resets_sent=1.5)  # type: ignore[arg-type]
    network = [NetworkCounters("target", 4210, 4210, 0, 12, 3, 812, 129), NetworkCounters("generator")]
    result = RunResult(Identity("s", "c1", "ab"), Outcome(Status.OK), network=network)
    back = RunResult.from_dict(result.to_dict())
    assert back.network == network
    assert str(network[0]).startswith("target: listen_overflows 4210, listen_drops 4210, syn_retransmits 0")
    assert str(network[1]) == "generator: nothing read"
    # A record written before the counters simply lacks them.
    old = result.to_dict()
    del old["network"]
    assert RunResult.from_dict(old).network == []


def test_a_stored_record_with_a_negative_counter_is_refused() -> None:
    data = RunResult(Identity("s", "c1", "ab"), Outcome(Status.OK), network=[NetworkCounters("both")]).to_dict()
    data["network"][0]["syn_retransmits"] = -3
    with pytest.raises(SchemaError, match="syn_retransmits: -3 is negative"):
        RunResult.from_dict(data)


def test_over_ssh_the_target_machines_counters_are_read_there(sshd, tmp_path: Path) -> None:
    """Targets on `hosts.target` (a real sshd on this machine), a command and a bundled stack:
    their machine's counters are read there, through the Host interface, and the generator's
    here; two records, never one summed. The bundled one's accept queue comes from its monitor,
    sampled there."""
    from conftest import need
    from toolbench.record import store
    from toolbench.run import runner
    from toolbench.scenario import read as scenario

    need("ab")
    port = free_port()
    www = tmp_path / "www"
    www.mkdir()
    (www / "index.html").write_text("hi")
    path = tmp_path / "far.yaml"
    path.write_text(f"""\
name: far
hosts:
  target: {{address: 127.0.0.1, port: {sshd.port}, user: {sshd.user}, key: "{sshd.client_key}",
           tools: {{python: "{sys.executable}"}}}}
targets:
  cmd:
    command: "{sys.executable} -m http.server {port} --bind 127.0.0.1 --directory {www}"
    url: "http://127.0.0.1:{port}"
    ready: {{path: /index.html, timeout: 10s}}
  threads: {{server: socket-threads, sleep: 0ms}}
request: {{path: /index.html}}
matrix: {{tool: [ab], concurrency: [2]}}
stop: {{requests: 50}}
monitor: {{interval: 100ms}}
probe: {{enabled: false}}
""")
    summary = runner.run(scenario.load(path), tmp_path / "reports", known_hosts=sshd.known_hosts,
                         allow_commands=True)
    results = {r.identity.target_label: r for r in store.RunDir.open(summary.run_dir).results()}
    assert set(results) == {"cmd", "threads"}
    for name, result in results.items():
        assert result.outcome.status is Status.OK, (name, result.outcome.error)
        assert [n.machine for n in result.network] == ["target", "generator"], name
        for counters in result.network:
            assert all(getattr(counters, c) is not None and getattr(counters, c) >= 0 for c in COUNTERS), name
            assert counters.time_wait_at_end is not None
        assert result.network[1].accept_queue_peak is None  # the generator listens to nothing
    assert results["cmd"].network[0].accept_queue_peak is None  # no monitor there for a command: not read
    threads = results["threads"].network[0].accept_queue_peak
    assert threads is not None and threads >= 0
