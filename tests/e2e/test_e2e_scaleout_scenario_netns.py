"""scenarios/scale-out.yaml as a user runs it, on the machines of tests/helpers/netns.py: `toolbench
run` in `ctl` (the scenario's key replaced by the test net's), then `toolbench report`; and a
Ctrl-C in the middle of a cell scaled out over SSH. Every count is checked against the target's
own access log, told apart by client address and User-Agent."""
from __future__ import annotations

import collections
import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO
from helpers import netns
from helpers.netns_runs import TOOLBENCH, run_in_ctl, scenario
from toolbench.record import store
from toolbench.record.schema import RunResult, Status

pytestmark = pytest.mark.integration
SCENARIO = REPO / "scenarios" / "scale-out.yaml"
CONCURRENCY = 4  # the scenario's
# What each tool says it is, in nginx's log (the combined format ends with the User-Agent).
AGENT = {"engine": "toolbench-engine", "locust": "gevent-http-client", "jmeter": "Apache-HttpClient"}


def served(log: Path, since: int) -> collections.Counter[tuple[str, str]]:
    """Requests nginx served since byte `since`, by (client address, tool)."""
    seen: collections.Counter[tuple[str, str]] = collections.Counter()
    for line in log.read_bytes()[since:].decode().splitlines():
        agent = line.rsplit('"', 2)[-2]
        tool = next((t for t, said in AGENT.items() if said in agent), "other")
        seen[(line.split()[0], tool)] += 1
    return seen


def generators_rows(html: str) -> list[list[str]]:
    """The cells of each row of the report's Generators table."""
    start = html.index('id="generators"')
    section = html[start:html.index("</section>", start)]
    rows = re.findall(r"<tr>(.*?)</tr>", section, re.S)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in rows if "<td" in row]


def test_the_scale_out_scenario_runs_three_tools_on_two_generators_and_reports_each(
        testnet: netns.TestNet, nginx_there: Path, tmp_path: Path) -> None:
    key = testnet.machines["gen1"].sshd.client_key
    text = SCENARIO.read_text()
    assert str(netns.STATE / "client_key") in text and f":{netns.NGINX_PORT}/" in text
    path = tmp_path / "scale-out.yaml"
    path.write_text(text.replace(str(netns.STATE / "client_key"), str(key)))
    since = nginx_there.stat().st_size if nginx_there.exists() else 0
    done, results, _ = run_in_ctl(testnet, path, tmp_path / "reports")
    run_dir = next(p for p in (tmp_path / "reports").iterdir() if p.is_dir())
    assert done.returncode == 0, done.stderr.decode()[-3000:] + _what_the_tools_said(run_dir)
    (run_dir / "report.html").unlink()
    reported = testnet.run("ctl", [*TOOLBENCH, "report", str(run_dir)])
    assert reported.returncode == 0, reported.stderr.decode()

    assert sorted((r.identity.tool, r.outcome.status) for r in results) == [  # in the run's shuffled order
        ("engine", Status.OK), ("jmeter", Status.OK), ("locust", Status.OK)], [r.outcome.error for r in results]
    seen = served(nginx_there, since)
    addresses = {g: testnet.machines[g].address for g in ("gen1", "gen2")}
    for result in results:
        _check_cell(result, seen, addresses)
    rows = generators_rows((run_dir / "report.html").read_text())
    assert sorted((row[0], row[1], row[3], row[6]) for row in rows) == sorted(
        (r.identity.cell_id, p.name, "ok", f"{p.measurement.counts.requests_total:,}") for r in results
        for p in r.generators)
    recorded = store.RunDir.open(run_dir).manifest().generators
    assert [(g.name, g.host) for g in recorded] == [(g, f"root@{a}:22") for g, a in addresses.items()]
    assert all(g.clock is not None and {t.tool for t in g.tools} == set(AGENT) for g in recorded)


def _what_the_tools_said(run_dir: Path) -> str:
    """The last lines of every output a cell's tool left, controller's and generators': what a
    failure in CI can be diagnosed from once the run's folder is gone."""
    said = []
    for path in sorted(run_dir.rglob("*")):
        if path.is_file() and path.name in ("stdout.txt", "stderr.txt", "server.log", "jmeter.log"):
            lines = path.read_text(errors="replace").splitlines()[-15:]
            said.append(f"\n--- {path.relative_to(run_dir)}\n" + "\n".join(lines))
    return "".join(said)[-12000:]


def _check_cell(result: RunResult, seen: collections.Counter[tuple[str, str]], addresses: dict[str, str]) -> None:
    """The merged count is the sum of the parts', and each part's is what nginx served from its
    generator: all of it, or up to one request per connection of it more (those in flight when
    a duration stop cut them off, served but not counted)."""
    tool, parts = result.identity.tool, result.generators
    assert [(p.name, p.status) for p in parts] == [("gen1", Status.OK), ("gen2", Status.OK)]
    merged = result.measurement.counts.requests_total
    assert merged is not None and merged > 0 and result.measurement.counts.requests_failed == 0
    figures = [p.measurement.counts.requests_total for p in parts]
    assert None not in figures and merged == sum(figures), (tool, merged, figures)
    assert result.measurement.counts.requests_ok == sum(p.measurement.counts.requests_ok for p in parts)
    for part, counted in zip(parts, figures):
        logged = seen[(addresses[part.name], tool)]
        assert 0 < counted <= logged <= counted + CONCURRENCY // 2, (tool, part.name, counted, logged)
    logged = sum(seen[(a, tool)] for a in addresses.values())
    assert merged <= logged <= merged + CONCURRENCY, (tool, merged, logged)
    for part in parts:  # each generator's own latency, rate and cost, from its own monitor
        assert part.measurement.latency.percentiles.p99_ms is not None and part.measurement.rates.rps_ok, part
        assert part.cost is not None and part.cost.cpu_user_s is not None and part.cost.samples, part.cost
        assert part.cost.sockets_peak and part.generator_bound is not None, part.cost
    if tool == "locust":
        assert any("2 workers on 2 generators" in note for note in result.notes), result.notes
    elif tool == "jmeter":  # the servers at JMeter's pinned ports, one per generator
        said = next(note for note in result.notes if ":1099: " in note)
        assert f"{addresses['gen1']}:1099: {figures[0]}" in said and f"{addresses['gen2']}:1100: {figures[1]}" in said
    duration, asked = result.measurement.timing.duration_s, 2.0  # the scenario's stop
    assert duration is not None and (duration >= 0.9 * asked) == (
        not any(f"of the {asked:g}s asked" in note for note in result.notes)), (tool, duration, result.notes)


def test_ctrl_c_mid_cell_stops_the_tool_on_every_generator_and_keeps_what_was_measured(
        testnet: netns.TestNet, nginx_there: Path, tmp_path: Path) -> None:
    """A real SIGINT to `toolbench run` in `ctl` while both generators load nginx over SSH:
    it exits 130 with the cell stored as interrupted and both parts kept, and nothing of it
    is left running on any machine (every process in gen1, gen2 and ctl is the sshd again)."""
    path = scenario(testnet, tmp_path, "engine", "{duration: 60s}")
    since = nginx_there.stat().st_size if nginx_there.exists() else 0
    reports = tmp_path / "reports"
    proc = testnet.spawn("ctl", [*TOOLBENCH, "run", str(path), "--reports-dir", str(reports), "--no-progress",
                                 "--known-hosts", str(testnet.known_hosts())], tmp_path / "run.log")
    addresses = [testnet.machines[g].address for g in ("gen1", "gen2")]
    deadline = time.monotonic() + 120
    while not all(served(nginx_there, since)[(a, "engine")] > 0 for a in addresses):
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "run.log").read_text()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == 130, (tmp_path / "run.log").read_text()
    said = (tmp_path / "run.log").read_text()
    assert "Traceback" not in said and "interrupted by SIGINT" in said

    for role in ("gen1", "gen2", "ctl"):
        _wait_only_sshd(testnet, role)
    run_dir = next(p for p in reports.iterdir() if p.is_dir())
    (result,) = store.RunDir.open(run_dir).results()
    assert result.outcome.status is Status.INTERRUPTED, result.outcome
    assert [(p.name, p.status) for p in result.generators] == [("gen1", Status.INTERRUPTED),
                                                               ("gen2", Status.INTERRUPTED)]
    for part in result.generators:  # what the tool wrote before it was stopped, streamed back
        assert (run_dir / part.path / "command.txt").exists() and (run_dir / part.path / "stderr.txt").exists()
    assert json.loads((run_dir / store.MANIFEST).read_text())["status"] == "interrupted"
    assert (run_dir / "report.html").exists()


def _wait_only_sshd(testnet: netns.TestNet, role: str) -> None:
    """Waits (bounded) until the machine runs nothing but its listening sshd: the sessions
    end with their channels, and every process toolbench started there with them."""
    machine = testnet.machines[role]
    assert machine.sshd is not None
    left: set[int] = set()
    for _ in range(300):
        listed = subprocess.run(["ip", "netns", "pids", machine.name], capture_output=True, text=True, check=True)
        left = {int(pid) for pid in listed.stdout.split()} - {machine.sshd.pid}
        if not left:
            return
        time.sleep(0.05)
    raise AssertionError(f"{role} still runs {_commands(left)}")


def _commands(pids: set[int]) -> list[str]:
    found = []
    for pid in pids:
        try:
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
        except OSError:
            pass
    return found
