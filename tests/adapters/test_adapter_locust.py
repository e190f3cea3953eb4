"""Locust's adapter over output recorded from the real Locust 2.47.0 (commands in
fixtures/locust/README.md and CASES.tsv)."""
import dataclasses
import json
import subprocess
import sys

import pytest

from conftest import FIXTURES, REPO
from toolbench.adapters.locust import adapter as locust
from toolbench.contract.adapter import Found, RawOutput
from toolbench.contract.cell import Cell
from toolbench.errors import ParseError
from toolbench.record import histogram
from toolbench.record.derive import cell_status, complete
from toolbench.record.schema import Fidelity, Status
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

FOLDER = FIXTURES / "locust"
CSVS = {"stats_csv": "stats", "history_csv": "stats_history", "failures_csv": "failures",
        "exceptions_csv": "exceptions"}


def raw(case: str, streams: bool = True, csvs: tuple[str, ...] = tuple(CSVS), exit_code: int = 0) -> RawOutput:
    name = f"2.47.0-{case}"
    files = {role: FOLDER / f"{name}_{CSVS[role]}.csv" for role in csvs if (FOLDER / f"{name}_{CSVS[role]}.csv").exists()}
    return RawOutput(stdout=(FOLDER / f"{name}.txt").read_text() if streams else "",
                     stderr=(FOLDER / f"{name}.stderr.txt").read_text() if streams else "",
                     exit_code=exit_code, files=files, source=name)


def parse(case: str, **kwargs):
    return complete(locust.parse(raw(case, **kwargs)))


def verdict(case: str, **kwargs) -> tuple[Status, str | None]:
    r = raw(case, **kwargs)
    try:
        m = complete(locust.parse(r))
    except ParseError:
        m = None
    return cell_status(m, r.exit_code, timed_out=False, interrupted=False, timeout_s=10, stderr=r.stderr)


def test_single_process_json_is_preferred_to_the_lagging_csv():
    m = parse("single")
    assert m.counts.requests_total == 8918 and m.counts.requests_ok == 8918 and m.counts.requests_failed == 0
    assert "figures from Locust's JSON output (final)" in m.notes
    # The same run's stats CSV stopped a second short: 5,259 requests.
    from_csv = parse("single", streams=False)
    assert from_csv.counts.requests_total == 5259
    assert any("stats CSV" in note for note in from_csv.notes)
    assert m.rates.rps == 4928.95  # the final summary on stderr
    assert m.timing.duration_s == pytest.approx(1796001593.3967254 - 1796001591.6109662)
    assert m.rates.rps_derived == pytest.approx(8918 / m.timing.duration_s)
    assert m.transfer.received_bytes == 115934
    assert m.latency.min_ms == pytest.approx(0.18109699999513396)
    assert m.latency.max_ms == pytest.approx(30.03987799979768)
    assert m.latency.mean_ms == pytest.approx(11432.71197700642 / 8918)
    assert m.latency.percentiles.p50_ms == 1.0 and m.latency.percentiles.p99_ms == 3.0
    assert m.latency.percentiles.p999_ms == 29.0
    assert m.latency.resolution_ms == 1.0
    assert m.latency.connect_mean_ms is None and m.latency.ttfb_mean_ms is None
    assert m.fidelity["timing.duration_s"] is Fidelity.DERIVED


def test_histogram_from_rounded_buckets_and_series_per_second():
    m = parse("single")
    hist = histogram.decode(m.histogram)
    assert hist.get_total_count() == 8918
    assert m.fidelity["histogram"] is Fidelity.DERIVED
    assert any("rounds each time before bucketing" in note for note in m.notes)
    assert [s.requests for s in m.series] == [2622, 4610, 1686]
    assert all(s.errors == 0 for s in m.series)
    assert m.fidelity["series"] is Fidelity.REPORTED
    assert m.latency.stdev_ms is not None and m.fidelity["latency.stdev_ms"] is Fidelity.DERIVED


def test_processes2_master_json_after_the_workers_empty_lists():
    text = (FOLDER / "2.47.0-processes2.txt").read_text()
    assert text.startswith("[]\n[]\n[")
    m = parse("processes2")
    assert m.counts.requests_total == 21342 and m.counts.requests_failed == 0
    assert m.rates.rps == 10496.82
    assert m.transfer.received_bytes == 277446
    # Here the master's CSV agrees with its JSON.
    assert parse("processes2", streams=False).counts.requests_total == 21342


def test_httpuser_and_request_budget_runs():
    assert parse("httpuser-close").counts.requests_total == 1670
    m = parse("requests500")
    assert m.counts.requests_total == 500 and m.counts.requests_ok == 500
    assert m.rates.rps == 3617.53


@pytest.mark.parametrize("case, count", [("404", 3561), ("httpuser-404", 1057)])
def test_404_is_http_4xx_with_its_status_code(case, count):
    m = parse(case)
    assert m.counts.requests_total == count and m.counts.requests_ok == 0
    assert m.counts.failures.http_4xx == count and m.counts.failures.connect == 0
    assert m.counts.status_codes == {404: count}
    assert any("known only for failed requests" in note for note in m.notes)
    assert verdict(case)[0] is Status.FAILED


def test_refused_counts_connect_failures_and_fails_the_cell():
    m = parse("refused")
    assert m.counts.requests_total == 2127 and m.counts.failures.connect == 2127
    assert m.transfer.received_bytes == 0
    status, error = verdict("refused")
    assert status is Status.FAILED and "2127 connect" in error


def test_timeouts_come_from_the_final_error_report_not_the_lagging_csv():
    m = parse("timeout")
    assert m.counts.requests_total == 4 and m.counts.failures.timeout == 4
    assert m.latency.min_ms == pytest.approx(1002.6576069999464)
    # Locust rounds 1,002.7 ms to its bucket of 1,000 before it reads p50 from it: the true p50
    # lies within [min, max], and the min is within that rounding of it.
    assert m.latency.percentiles.p50_ms == m.latency.min_ms
    assert any("p50_ms 1000 is Locust's bucket" in note for note in m.notes)
    # Without the stderr summary the failures CSV knows 2 of the 4, and says so.
    without_summary = complete(locust.parse(dataclasses.replace(raw("timeout"), stderr="")))
    assert without_summary.counts.failures.timeout == 2
    assert any("accounts for 2 of 4" in note for note in without_summary.notes)


def test_killed_run_falls_back_to_the_csv():
    m = parse("killed")
    assert m.counts.requests_total == 10470
    assert m.rates.rps == pytest.approx(5223.083913334204)
    assert m.histogram is None and m.latency.percentiles.p99_ms == 1.0
    assert m.fidelity["timing.duration_s"] is Fidelity.DERIVED
    status, error = verdict("killed", exit_code=-9)
    assert status is Status.FAILED and "killed by SIGKILL" in error


def test_locustfile_that_fails_to_import_is_a_failed_cell_with_the_reason():
    with pytest.raises(ParseError, match="No module named 'toolbench_no_such_module'"):
        locust.parse(raw("importerror", exit_code=1))
    status, error = verdict("importerror", exit_code=1)
    assert status is Status.FAILED
    assert error == "exit code 1: ModuleNotFoundError: No module named 'toolbench_no_such_module'"


def test_all_zero_stats_csv_is_a_failed_cell():
    # Written before the first request of a 1 s run: a header and an all-zero Aggregated row.
    m = parse("404", streams=False)
    assert m.counts.requests_total == 0 and m.rates.rps is None and m.latency.mean_ms is None
    assert verdict("404", streams=False)[0] is Status.FAILED


def test_empty_stats_csv_is_a_clear_parse_error(tmp_path):
    empty = tmp_path / "stats_stats.csv"
    empty.write_text("")
    with pytest.raises(ParseError, match="stats CSV is empty"):
        locust.parse(RawOutput(files={"stats_csv": empty}, source="empty"))


def test_truncated_json_without_csv_is_a_clear_parse_error():
    text = (FOLDER / "2.47.0-single.txt").read_text()
    with pytest.raises(ParseError, match="no JSON stats"):
        locust.parse(RawOutput(stdout=text[: len(text) // 2], source="truncated"))


def test_classify_roles_by_content():
    for role, suffix in CSVS.items():
        path = FOLDER / f"2.47.0-single_{suffix}.csv"
        assert locust.ADAPTER.classify(path, path.read_text()) == role
    assert locust.ADAPTER.classify(FOLDER / "2.47.0-single.txt", "[\n") == "stdout"


def test_detect_reads_the_version():
    from toolbench.hosts.local import LocalHost
    assert locust.ADAPTER.detect(LocalHost()) == Found(sys.executable, "2.47.0")
    assert (FOLDER / "2.47.0-version.txt").read_text().startswith("locust 2.47.0 ")


def cell(**changes) -> Cell:
    base = Cell(scenario="t", tool="locust", concurrency=10, keepalive=True, repetition=1,
                request=RequestSpec(path="/a?b=1"), stop=StopSpec(duration_s=3), timeout_s=60,
                url="http://127.0.0.1:8080/a?b=1")
    return dataclasses.replace(base, **changes)


FOUND = Found("/opt/py/bin/python3", "2.47.0")


def test_build_headless_run_with_csv_and_json(tmp_path):
    inv = locust.ADAPTER.build(cell(options={"processes": 2}), tmp_path, FOUND)
    assert inv.argv[:3] == ["/opt/py/bin/python3", "-m", "locust"]  # the generator's Python
    args = inv.argv[3:]
    assert args[args.index("-u") + 1] == "10" and args[args.index("-r") + 1] == "10"
    assert args[args.index("-t") + 1] == "3s"
    assert args[args.index("--host") + 1] == "http://127.0.0.1:8080"
    assert args[args.index("--processes") + 1] == "2"
    assert "--json" in args and "--csv-full-history" in args
    assert inv.outputs["stats_csv"] == "stats_stats.csv"
    params = json.loads(inv.files["locust_params.json"])
    assert params["user_class"] == "FastHttpUser" and params["path"] == "/a?b=1" and params["budget"] is None
    compile(inv.files["locustfile.py"], "locustfile.py", "exec")


def test_one_process_per_core_counts_the_cpus_the_placement_gave_the_generator(tmp_path):
    def processes(c: Cell) -> str | None:
        args = locust.ADAPTER.build(c, tmp_path, FOUND).argv
        return args[args.index("--processes") + 1] if "--processes" in args else None

    assert processes(cell(options={"processes": -1})) == "-1"  # not placed: Locust counts the host's cores
    assert processes(dataclasses.replace(cell(options={"processes": -1}), cpus=1)) == "1"
    assert processes(dataclasses.replace(cell(options={"processes": 2}), cpus=1)) == "2"  # a count is a count
    assert processes(dataclasses.replace(cell(), cpus=3)) is None  # one process stays one


def test_build_keepalive_off_httpuser_budget_and_body(tmp_path):
    c = cell(keepalive=False, stop=StopSpec(requests=500), options={"user_class": "HttpUser"},
             request=RequestSpec(method="POST", path="/a", body='{"x": "\'"}', content_type="application/json"))
    inv = locust.ADAPTER.build(c, tmp_path, FOUND)
    assert "--processes" not in inv.argv
    assert inv.argv[inv.argv.index("-t") + 1] == "50s"  # a budget still gets a run time under the hard limit
    params = json.loads(inv.files["locust_params.json"])
    assert params["user_class"] == "HttpUser" and params["budget"] == 500
    assert params["headers"] == {"Connection": "close", "Content-Type": "application/json"}
    assert params["body"] == '{"x": "\'"}'
    # The locustfile is one fixed file: nothing of the cell is written into code.
    assert inv.files["locustfile.py"] == locust.ADAPTER.build(cell(), tmp_path, FOUND).files["locustfile.py"]


@pytest.mark.parametrize("changes, reason", [
    ({"rate_rps": 100.0}, "no fixed-rate"),
    ({"stop": StopSpec(requests=100), "options": {"processes": 2}}, "several worker processes"),
    ({"stop": StopSpec(duration_s=2.5)}, "whole seconds"),
    ({"options": {"user_class": "WebSocketUser"}}, "user_class"),
    ({"options": {"processes": 0}}, "processes"),
])
def test_unsupported_cells_say_why(changes, reason):
    support = locust.ADAPTER.supports(cell(**changes))
    assert not support.ok and reason in support.reason


def test_supported_cells():
    assert locust.ADAPTER.supports(cell()).ok
    assert locust.ADAPTER.supports(cell(keepalive=False, options={"processes": -1})).ok
    assert locust.ADAPTER.supports(cell(stop=StopSpec(requests=10))).ok


def toolbench_parse(*names: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / ".venv" / "bin" / "toolbench"), "parse", "--tool", "locust",
                           *(str(FOLDER / n) for n in names), "--format", "json"],
                          capture_output=True, text=True, timeout=60)


def test_cli_parse_json_and_stderr():
    proc = toolbench_parse("2.47.0-refused.txt", "2.47.0-refused.stderr.txt")
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["outcome"]["status"] == "failed"
    assert result["measurement"]["counts"]["requests_total"] == 2127 and result["measurement"]["counts"]["failures"]["connect"] == 2127
    assert result["measurement"]["rates"]["rps"] == 2642.3


def test_cli_parse_stats_csv_alone():
    proc = toolbench_parse("2.47.0-processes2_stats.csv")
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["outcome"]["status"] == "ok" and result["measurement"]["counts"]["requests_total"] == 21342


def test_cli_parse_import_failure_is_one_line_error():
    proc = toolbench_parse("2.47.0-importerror.txt", "2.47.0-importerror.stderr.txt")
    assert proc.returncode != 0
    assert "No module named 'toolbench_no_such_module'" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_group_name_joins_a_runs_files():
    names = ["2.47.0-single.txt", "2.47.0-single.stderr.txt"] + [f"2.47.0-single_{s}.csv" for s in CSVS.values()]
    assert {locust.ADAPTER.group_name(FOLDER / n) for n in names} == {str(FOLDER / "2.47.0-single")}


def test_requests_per_connection_is_planned_unsupported_with_the_reason():
    support = locust.ADAPTER.supports(cell(stop=StopSpec(requests_per_connection=10)))
    assert not support.ok and "per connection" in support.reason
