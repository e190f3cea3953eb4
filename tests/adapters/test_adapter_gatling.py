"""Gatling's adapter over its recorded real simulation.log files (tests/fixtures/gatling, made
by record.py there), and what it builds for a cell."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from toolbench.adapters.gatling import adapter as gatling
from toolbench.contract import registry
from toolbench.contract.adapter import Found, RawOutput, raw_from_files
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError
from toolbench.record import histogram
from toolbench.record.schema import Measurement, Omission
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

FOLDER = FIXTURES / "gatling"
ADAPTER = registry.get("gatling")


def parsed(case: str) -> Measurement:
    paths = sorted(p for p in FOLDER.iterdir() if p.name.startswith(f"3.10.5-{case}."))
    assert paths, case
    return parse_checked(ADAPTER, raw_from_files(ADAPTER, case, paths))


def requests_in(case: str) -> list[list[str]]:
    """The REQUEST records of a fixture, read here apart from the parser."""
    lines = (FOLDER / f"3.10.5-{case}.log").read_text().split("\n")[:-1]  # a torn last line has no "\n"
    return [line.split("\t") for line in lines if line.startswith("REQUEST\t")]


def log_of(tmp_path: Path, text: str | bytes) -> RawOutput:
    path = tmp_path / "simulation.log"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return RawOutput(files={"log": path}, source="mutated")


def test_an_open_model_run_reads_every_request_to_the_millisecond():
    m = parsed("ok")
    rows = requests_in("ok")
    assert m.counts.requests_total == m.counts.requests_ok == len(rows) == 100  # 50/s for 2 s
    took = sorted(int(r[4]) - int(r[3]) for r in rows)
    assert m.latency.min_ms == took[0] and m.latency.max_ms == took[-1]
    assert m.timing.duration_s == (max(int(r[4]) for r in rows) - min(int(r[3]) for r in rows)) / 1000.0
    assert histogram.decode(m.histogram).get_total_count() == 100 and m.histogram_resolution_ms == 1.0
    assert sum(s.requests for s in m.series) == 100 and m.latency.resolution_ms == 1.0
    assert m.coordinated_omission is Omission.NOT_CORRECTED and m.tool_version == "3.10.5"
    assert m.transfer.received_bytes is None and m.counts.status_codes == {}  # the log has neither
    assert m.latency.percentiles.p99_ms is not None  # derived from the histogram


@pytest.mark.parametrize("case, total", [("closed", None), ("close", 300)])
def test_closed_model_runs_count_every_request(case, total):
    m = parsed(case)
    assert m.counts.requests_total == m.counts.requests_ok == len(requests_in(case)) > 0
    if total is not None:  # a request budget shared by the users: exactly that many
        assert m.counts.requests_total == total


def test_a_404_is_an_http_4xx_failure():
    m = parsed("404")
    assert m.counts.requests_total == m.counts.requests_failed == m.counts.failures.http_4xx == 40
    assert m.counts.requests_ok == 0 and any("404 is not less than 400" in n for n in m.notes)


def test_refused_connections_are_connect_failures():
    m = parsed("refused")
    assert m.counts.requests_total == m.counts.failures.connect == len(requests_in("refused")) == 10
    assert m.counts.requests_ok == 0


def test_unanswered_requests_are_timeouts():
    m = parsed("timeout")
    rows = requests_in("timeout")
    timed_out = sum(1 for r in rows if "timeout" in r[6].lower())
    assert timed_out > 0 and m.counts.failures.timeout == timed_out
    assert m.counts.requests_total == len(rows) == 4


def test_a_run_cut_off_is_read_up_to_its_torn_line_and_said():
    m = parsed("cut")
    assert not (FOLDER / "3.10.5-cut.log").read_bytes().endswith(b"\n")
    assert m.counts.requests_total == len(requests_in("cut")) > 0
    assert any(n.startswith("the run was cut off") and "torn" in n for n in m.notes)


def test_per_second_timings_count_every_request():
    paths = [FOLDER / "3.10.5-closed.log"]
    tally = ADAPTER.timings(raw_from_files(ADAPTER, "closed", paths))
    assert tally is not None and tally.requests == len(requests_in("closed"))


def test_a_text_log_with_binary_bytes_in_its_head_is_refused_in_one_line(tmp_path):
    real = (FOLDER / "3.10.5-ok.log").read_bytes()
    with pytest.raises(ParseError, match=r"binary bytes, not the text simulation.log of Gatling 2.0 to 3.12$"):
        ADAPTER.parse(log_of(tmp_path, b"\x00\x00\x00\x01" + real))


@pytest.mark.parametrize("change, message", [
    (lambda rows: rows[:1] + rows[2:3] + [rows[0]] + rows[3:], "a second RUN record"),
    (lambda rows: [r.replace("\tOK\t", "\tMAYBE\t") for r in rows], "OK or KO"),
    (lambda rows: rows[1:], "does not begin with its RUN record"),
])
def test_a_damaged_log_is_a_parse_error(tmp_path, change, message):
    rows = (FOLDER / "3.10.5-ok.log").read_text().splitlines(keepends=True)
    with pytest.raises(ParseError, match=message):
        ADAPTER.parse(log_of(tmp_path, "".join(change(rows))))


def test_a_request_that_ends_before_it_starts_is_a_parse_error(tmp_path):
    rows = (FOLDER / "3.10.5-ok.log").read_text().splitlines(keepends=True)
    at = next(i for i, r in enumerate(rows) if r.startswith("REQUEST"))
    fields = rows[at].split("\t")
    fields[3], fields[4] = fields[4], str(int(fields[3]) - 5)
    rows[at] = "\t".join(fields)
    with pytest.raises(ParseError, match="before it starts"):
        ADAPTER.parse(log_of(tmp_path, "".join(rows)))


def test_without_a_log_gatlings_last_words_are_the_error():
    with pytest.raises(ParseError, match="no simulation.log; Gatling said: gatling: javac could not compile"):
        ADAPTER.parse(RawOutput(stderr="x\ngatling: javac could not compile ToolbenchSimulation.java\n"))


def test_the_log_is_told_from_other_files():
    head = (FOLDER / "3.10.5-ok.log").read_text()[:500]
    assert ADAPTER.recognizes(Path("simulation.log"), head)
    assert not ADAPTER.recognizes(Path("out.txt"), (FOLDER / "3.10.5-ok.txt").read_text())


# ---- what is built ----

def cell(**kw) -> Cell:
    base = dict(scenario="t", tool="gatling", concurrency=4, keepalive=True, repetition=1, request=RequestSpec(),
                stop=StopSpec(duration_s=1.5), timeout_s=60, url="http://127.0.0.1:8080/x?y=1")
    base.update(kw)
    return Cell(**base)


def built(**kw):
    c = cell(**kw)
    assert ADAPTER.supports(c).ok, ADAPTER.supports(c).reason
    inv = ADAPTER.build(c, Path("/nonexistent"), Found("/opt/gatling/bin/gatling", "3.10.5"))
    return inv, json.loads(inv.files[gatling.PARAMS])


def test_a_cell_is_data_beside_one_fixed_simulation_source():
    hostile = RequestSpec(method="POST", path="/#{x}", headers={"X-A": "#{__exec}\"; System.exit(1);"},
                          body='"); Runtime.getRuntime().exec("x', content_type="text/plain")
    plain, p = built()
    odd, q = built(request=hostile, url="http://127.0.0.1:8080/#{x}", rate_rps=25.0, keepalive=False)
    assert plain.files[gatling.SOURCE] == odd.files[gatling.SOURCE]  # nothing of the cell in the code
    assert plain.argv == ["/opt/gatling/bin/gatling", "run", gatling.SOURCE, gatling.PARAMS, gatling.RESULTS]
    assert plain.outputs == {"log": "simulation.log"}
    assert p == {"url": "http://127.0.0.1:8080/x?y=1", "method": "GET", "headers": [], "body": None,
                 "keepalive": True, "connection_header_given": False, "concurrency": 4, "rate_rps": None,
                 "duration_ms": 1500, "requests": None, "per_user": None, "timeout_ms": 30000, "http2": False}
    assert q["url"] == "http://127.0.0.1:8080/#{x}" and q["rate_rps"] == 25.0 and q["keepalive"] is False
    assert q["headers"] == [["Content-Type", "text/plain"], ["X-A", "#{__exec}\"; System.exit(1);"]]
    assert q["body"] == hostile.body


def test_request_counts_and_jvm_flags():
    _, p = built(stop=StopSpec(requests_per_connection=5))
    assert p["requests"] == 20 and p["per_user"] == 5 and p["duration_ms"] is None
    _, p = built(stop=StopSpec(requests_per_connection=5), rate_rps=10.0)
    assert p["requests"] == 20 and p["per_user"] is None  # the open model injects 20 users at the rate
    inv, _ = built(options={"heap": "1g", "timeout_s": 3})
    assert inv.env["GATLING_JVM"].startswith("-Xms1g -Xmx1g ") and "-XX:TieredStopAtLevel=1" in inv.env["GATLING_JVM"]
    assert json.loads(inv.files[gatling.PARAMS])["timeout_ms"] == 3000


@pytest.mark.parametrize("kw, reason", [
    (dict(request=RequestSpec(method="TRACE")), "not TRACE"),
    (dict(options={"heap": "lots"}), "heap must be a size"),
    (dict(stop=StopSpec(requests=2 ** 31)), "at most"),
    (dict(stop=StopSpec(duration_s=0.0001)), "whole milliseconds"),
])
def test_cells_it_cannot_run_say_why(kw, reason):
    support = ADAPTER.supports(cell(**kw))
    assert not support.ok and reason in support.reason
