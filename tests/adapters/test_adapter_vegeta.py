"""vegeta's parser and builder over its recorded real output (commands in
tests/fixtures/vegeta/README.md and CASES.tsv)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from toolbench.contract import registry
from toolbench.contract.adapter import Found, RawOutput, raw_from_files
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError
from toolbench.record import histogram
from toolbench.record.schema import Fidelity, Measurement, Omission
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

URL = "http://127.0.0.1:8080/x?y=1"
HERE = FIXTURES / "vegeta"
ADAPTER = registry.get("vegeta")


def files(case: str) -> list[Path]:
    paths = sorted(p for p in HERE.iterdir() if p.name.startswith(f"12.13.0-{case}."))
    assert paths, case
    return paths


def parsed(case: str, keep: tuple[str, ...] = (".csv", ".json", ".gob", ".txt")) -> Measurement:
    paths = [p for p in files(case) if p.suffix in keep]
    return parse_checked(ADAPTER, raw_from_files(ADAPTER, case, paths))


def rows(case: str) -> list[list[str]]:
    with open(HERE / f"12.13.0-{case}.csv", newline="") as fh:
        return list(csv.reader(fh))


def report(case: str) -> dict:
    return json.loads((HERE / f"12.13.0-{case}.json").read_text())


def cell(**kw) -> Cell:
    base = dict(scenario="t", tool="vegeta", concurrency=4, keepalive=True, repetition=1, request=RequestSpec(),
                stop=StopSpec(duration_s=1.5), timeout_s=60, url=URL)
    return Cell(**(base | kw))


def test_rows_and_report_agree_and_every_request_is_in_the_histogram_and_series():
    m, said, table = parsed("ok"), report("ok"), rows("ok")
    assert m.counts.requests_total == m.counts.requests_ok == said["requests"] == len(table) == 100
    assert m.counts.status_codes == {200: 100} and m.transfer.received_bytes == said["bytes_in"]["total"] == 1300
    assert m.latency.max_ms == said["latencies"]["max"] / 1e6 == max(int(r[2]) for r in table) / 1e6
    assert m.latency.min_ms == said["latencies"]["min"] / 1e6 and m.latency.resolution_ms == 1e-6
    assert m.timing.duration_s == (said["duration"] + said["wait"]) / 1e9 and m.rates.rps == said["rate"]
    assert histogram.decode(m.histogram).get_total_count() == 100 and sum(s.requests for s in m.series) == 100
    assert m.coordinated_omission is Omission.NOT_CORRECTED


def test_percentiles_come_from_the_exact_rows_not_vegetas_estimates():
    m = parsed("closed")
    assert m.fidelity_of("latency.percentiles.p99_ms") is Fidelity.DERIVED  # from the HDR histogram
    assert m.fidelity_of("latency.max_ms") is Fidelity.REPORTED and m.fidelity_of("histogram") is Fidelity.DERIVED
    exact = sorted(int(r[2]) for r in rows("closed"))
    assert m.latency.percentiles.p50_ms == pytest.approx(exact[len(exact) // 2 - 1] / 1e6, rel=2 ** -9)
    # vegeta's report alone: its own (t-digest) p50..p99, said as reported, and nothing finer
    alone = parsed("closed", keep=(".json",))
    assert alone.latency.percentiles.p99_ms == report("closed")["latencies"]["99th"] / 1e6
    assert alone.fidelity_of("latency.percentiles.p99_ms") is Fidelity.REPORTED and alone.histogram is None
    assert alone.latency.percentiles.p66_ms is None and any("t-digest" in n for n in alone.notes)


def test_rows_alone_give_the_same_counts_and_the_rate():
    m, both = parsed("ok", keep=(".csv",)), parsed("ok")
    assert (m.counts.requests_total, m.counts.requests_ok, m.transfer.received_bytes) == (100, 100, 1300)
    assert m.rates.rps == pytest.approx(both.rates.rps, rel=0.02) and m.timing.duration_s == both.timing.duration_s
    assert m.latency.mean_ms == pytest.approx(both.latency.mean_ms, abs=1e-6)


@pytest.mark.parametrize("keep", [(".csv", ".json"), (".csv",), (".json",)])
def test_failures_by_class(keep):
    refused, timeout = parsed("refused", keep), parsed("timeout", keep)
    assert refused.counts.failures.connect == refused.counts.requests_failed == 20 and refused.counts.requests_ok == 0
    assert timeout.counts.failures.timeout == timeout.counts.requests_failed == 4
    assert timeout.latency.min_ms > 1000  # vegeta times the unanswered requests: about the 1 s timeout
    missing = parsed("404", keep)
    assert missing.counts.failures.http_4xx == 50 and missing.counts.status_codes == {404: 50}
    posted = parsed("post", keep)
    assert posted.counts.status_codes == {405: 20} and posted.transfer.sent_bytes == 20 * len('{"a": 1}')
    assert refused.counts.status_codes == {}  # vegeta's code 0 is no HTTP status


def test_a_cut_off_run_reads_the_requests_that_ended():
    m = parsed("cutoff")
    assert m.counts.requests_total == m.counts.requests_ok == len(rows("cutoff")) == 298
    assert [s.second for s in m.series] == [0, 1] and m.timing.duration_s < 2  # of the 10 s asked


def test_a_step_that_failed_after_vegeta_was_killed_is_noted():
    paths = {p.suffix: p for p in files("cutoff")}
    raw = RawOutput(files={"csv": paths[".csv"]}, step_errors={"report": "vegeta report -type=json results.bin: "
                                                                         "exit code 1: unexpected EOF"})
    m = parse_checked(ADAPTER, raw)
    assert m.counts.requests_total == 298 and any("unexpected EOF" in n for n in m.notes)
    with pytest.raises(ParseError, match="unexpected EOF"):  # after a vegeta that ended by itself: the cell fails
        parse_checked(ADAPTER, RawOutput(exit_code=0, files=raw.files, step_errors=raw.step_errors))


def test_no_results_and_mismatched_results_are_parse_errors(tmp_path):
    with pytest.raises(ParseError, match="no results"):
        parsed("version")
    paths = {p.suffix: p for p in files("ok")}
    mixed = RawOutput(files={"csv": paths[".csv"], "report": HERE / "12.13.0-404.json"})
    with pytest.raises(ParseError, match="the report counts 50, the rows 100"):
        ADAPTER.parse(mixed)
    wrong = tmp_path / "rows.csv"
    wrong.write_text(paths[".csv"].read_text().replace(",200,", ",2000,", 1))
    with pytest.raises(ParseError, match="2000 is not an HTTP status"):
        ADAPTER.parse(RawOutput(files={"csv": wrong}))


def test_timings_by_second_from_the_rows():
    tally = ADAPTER.timings(RawOutput(files={"csv": HERE / "12.13.0-cutoff.csv"}))
    assert tally is not None and tally.requests == 298
    assert [p.second for p in tally.percentiles()] == [0, 1]
    assert ADAPTER.timings(RawOutput()) is None


def test_files_are_told_apart_and_claimed():
    for suffix, role in ((".csv", "csv"), (".json", "report"), (".gob", "results"), (".txt", "stdout")):
        path = HERE / f"12.13.0-ok{suffix}"
        assert ADAPTER.classify(path, path.read_text(errors="replace")[:2000]) == role
    assert ADAPTER.recognizes(HERE / "12.13.0-ok.json", report_text := (HERE / "12.13.0-ok.json").read_text())
    assert not ADAPTER.recognizes(HERE / "x.txt", report_text[1:])
    assert ADAPTER.recognizes(HERE / "12.13.0-ok.csv", (HERE / "12.13.0-ok.csv").read_text())


def test_detect_names_the_version_from_the_install_folder():
    from toolbench.contract import toolsdir
    from toolbench.hosts.local import LocalHost
    installed = toolsdir.newest("go", "vegeta", "vegeta")
    if not installed:
        pytest.skip("vegeta is not built (scripts/install.sh builds it with go)")
    version = Path(installed[0]).parent.name.removeprefix("vegeta-")
    assert ADAPTER.detect(LocalHost()) == Found(installed[0], version)
    from helpers.cli import cli
    listed = [t for t in json.loads(cli("tools", "--json").stdout) if t["tool"] == "vegeta"]
    assert listed == [{"tool": "vegeta", "found": True, "version": version, "path": installed[0], "reason": None,
                       "install": None}]
    assert "/bin/echo -version names no version" in ADAPTER.detect(LocalHost(), "/bin/echo").reason
    assert (HERE / "12.13.0-version.txt").read_text().startswith("Version: \n")  # what it says of itself


# ---- the command ----

def built(**kw):
    c = cell(**kw)
    assert ADAPTER.supports(c).ok, ADAPTER.supports(c).reason
    return ADAPTER.build(c, Path("/nonexistent"), Found("/bin/vegeta", "12.13.0"))


def test_a_rate_cell_is_an_open_model_with_the_workers_unbounded_unless_asked():
    inv = built(rate_rps=40.0)
    args = inv.argv
    assert args[:2] == ["/bin/vegeta", "attack"] and args[args.index("-rate") + 1] == "40/1s"
    assert args[args.index("-workers") + 1] == "4" and "-max-workers" not in args
    assert args[args.index("-duration") + 1] == "1500ms" and args[args.index("-output") + 1] == "results.bin"
    bounded = built(rate_rps=2.5, options={"max_workers": 8}).argv
    assert bounded[bounded.index("-rate") + 1] == "5/2s" and bounded[bounded.index("-max-workers") + 1] == "8"
    assert [(s.role, s.argv[1:], s.stdout) for s in inv.steps] == [
        ("csv", ["encode", "--to", "csv", "results.bin"], "results.csv"),
        ("report", ["report", "-type=json", "results.bin"], "report.json")]
    assert inv.outputs == {"results": "results.bin"}


def test_a_closed_cell_bounds_the_workers_at_the_concurrency():
    args = built(keepalive=False).argv
    assert args[args.index("-rate") + 1] == "0" and args[args.index("-max-workers") + 1] == "4"
    assert "-keepalive=false" in args


def test_the_target_reaches_vegeta_as_json_whatever_it_holds():
    hostile = RequestSpec(method="POST", headers={"X-A": 'b"\n{"url": "http://evil/"}'}, body='{"a": 1}\n')
    inv = built(request=hostile)
    (line,) = inv.files["targets.json"].splitlines()
    target = json.loads(line)
    assert target["url"] == URL and target["method"] == "POST" and target["header"]["X-A"] == [hostile.headers["X-A"]]
    assert target["header"]["Content-Type"] == ["application/octet-stream"] and target["body"] == "eyJhIjogMX0K"


def test_unsupported_cells_say_why():
    assert "duration only" in ADAPTER.supports(cell(stop=StopSpec(requests=100))).reason
    assert "whole requests" in ADAPTER.supports(cell(rate_rps=1 / 3000)).reason
    assert "at least 1" in ADAPTER.supports(cell(rate_rps=10.0, options={"max_workers": 0})).reason
