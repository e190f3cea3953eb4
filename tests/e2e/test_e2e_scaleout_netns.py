"""A cell on two generators (toolbench.run.scaleout.fleet), on machines made of network namespaces
(tests/helpers/netns.py): nginx in `target`, the generators `gen1` and `gen2`, toolbench itself run
in `ctl`. The merge is checked against its parts and against nginx's own access log."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from helpers import netns
from helpers.netns_runs import by_client, run_in_ctl, scenario
from toolbench.record import histogram
from toolbench.record.schema import RunResult, Status

pytestmark = pytest.mark.integration


def check_merged(result: RunResult, testnet: netns.TestNet, log: Path, since: int) -> None:
    parts = result.generators
    assert [p.name for p in parts] == ["gen1", "gen2"] and all(p.status is Status.OK for p in parts)
    merged = result.measurement.counts
    assert merged.requests_total == sum(p.measurement.counts.requests_total for p in parts) > 0
    assert merged.requests_ok == sum(p.measurement.counts.requests_ok for p in parts)
    assert result.measurement.histogram == histogram.encode(
        histogram.merge([p.measurement.histogram for p in parts]))
    seen = by_client(log, since)
    for part in parts:
        assert seen[testnet.machines[part.name].address] == part.measurement.counts.requests_total
        assert part.clock is not None and part.clock.round_trips > 1 and part.clock.rtt_ms > 0
        assert part.cost is not None and part.cost.cpu_user_s is not None
    assert (result.measurement.series and sum(s.requests for s in result.measurement.series)
            == sum(sum(s.requests for s in p.measurement.series) for p in parts))


@pytest.mark.parametrize("tool, stop", [("engine", "{requests: 2000}"), ("ab", "{requests: 400}")])
def test_a_cell_on_two_generators_is_their_merge_and_what_nginx_served(testnet, nginx_there, tmp_path, tool, stop):
    since = nginx_there.stat().st_size if nginx_there.exists() else 0
    done, results, report = run_in_ctl(testnet, scenario(testnet, tmp_path, tool, stop), tmp_path / "reports")
    assert done.returncode == 0, done.stderr.decode()
    (result,) = results
    assert result.outcome.status is Status.OK, result.outcome.error
    check_merged(result, testnet, nginx_there, since)
    asked = 2000 if tool == "engine" else 400
    assert result.measurement.counts.requests_total == asked
    assert [p.requests for p in result.generators] == [asked // 2, asked // 2]
    assert [p.concurrency for p in result.generators] == [2, 2]
    assert "Generators" in report and all(testnet.machines[g].address in report for g in ("gen1", "gen2"))
    assert f"{result.generators[0].clock.offset_ms:+.1f} ±" in report


def test_a_generator_whose_sshd_stops_mid_run_makes_the_cell_partial(testnet, nginx_there, tmp_path):
    gen2 = testnet.machines["gen2"]
    assert gen2.sshd is not None and gen2.sshd.pid is not None
    path = scenario(testnet, tmp_path, "engine", "{duration: 6s}")
    since = nginx_there.stat().st_size
    stopped = threading.Event()

    def stop_once_loading() -> None:
        """gen2's sshd, with its sessions and the tool under them, once gen2's load reached nginx."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not stopped.is_set():
            if by_client(nginx_there, since)[gen2.address] > 0:
                netns.stop_tree(gen2.sshd.pid)
                stopped.set()
                return
            time.sleep(0.05)

    stopper = threading.Thread(target=stop_once_loading)
    stopper.start()
    try:
        done, results, report = run_in_ctl(testnet, path, tmp_path / "reports")
    finally:
        stopped.set()
        stopper.join()
        testnet.start_sshd("gen2")  # back for the tests after this one
    (result,) = results
    assert result.outcome.status is Status.PARTIAL, result.outcome
    assert "gen2" in result.outcome.error and "partial" in result.outcome.error
    parts = {p.name: p for p in result.generators}
    assert parts["gen1"].status is Status.OK and parts["gen2"].status is not Status.OK and parts["gen2"].error
    assert result.measurement.counts.requests_total is None  # nothing summed from fewer machines
    assert "engine-c4-ka-rep1 is partial" in report


def test_a_generator_whose_host_key_changed_fails_its_part_with_the_reason(testnet, nginx_there, tmp_path):
    lines = testnet.known_hosts().read_text().splitlines()
    gen1, gen2 = (testnet.machines[g].address for g in ("gen1", "gen2"))
    key_of_gen1 = next(line for line in lines if line.startswith(gen1 + " ")).split(" ", 1)[1]
    forged = tmp_path / "known_hosts"  # gen2 listed with another machine's key
    forged.write_text("".join(f"{gen2} {key_of_gen1}\n" if line.startswith(gen2 + " ") else line + "\n"
                              for line in lines))
    done, results, report = run_in_ctl(testnet, scenario(testnet, tmp_path, "ab", "{requests: 200}"),
                                       tmp_path / "reports", forged)
    (result,) = results
    assert result.outcome.status is Status.PARTIAL, result.outcome
    parts = {p.name: p for p in result.generators}
    assert parts["gen1"].status is Status.OK and parts["gen1"].measurement.counts.requests_total == 100
    assert parts["gen2"].status is Status.FAILED and "not reached" in parts["gen2"].error
    assert "key" in parts["gen2"].error.lower()
