"""siege's parser over output recorded from the real siege (commands in fixtures/siege/README.md)."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import recorded
from toolbench.adapters import siege
from toolbench.contract.adapter import Found, RawOutput
from toolbench.contract.cell import Cell
from toolbench.errors import ParseError
from toolbench.hosts.local import LocalHost
from toolbench.record import invariants
from toolbench.record.derive import cell_status, complete
from toolbench.record.schema import Fidelity, Status
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec


def parse(case: str, **files: str):
    return complete(siege.parse(recorded("siege", case, **files)))


def ok(m) -> tuple[Status, str | None]:
    return cell_status(m, 0, timed_out=False, interrupted=False, timeout_s=10, stderr="")


def test_text_summary_on_stderr():
    m = parse("4.0.7-benchmark")
    assert m.tool_version == "4.0.7"
    assert m.counts.requests_total == 2000 and m.counts.requests_ok == 2000 and m.counts.requests_failed == 0
    assert m.rates.rps == 12500.0
    assert m.timing.duration_s == 0.16
    assert m.latency.mean_ms == 0.0 and m.latency.max_ms == 10.0
    assert m.latency.resolution_ms == 10.0  # siege's hundredths of a second
    assert m.latency.percentiles.p50_ms is None  # siege reports no percentiles: absent
    assert m.transfer.received_bytes == round(0.02 * 1024 * 1024)
    assert ok(m)[0] is Status.OK


def test_json_summary_on_stdout():
    m = parse("4.0.7-benchmark-j")
    assert m.counts.requests_total == 2000 and m.rates.rps == 9090.91 and m.timing.duration_s == 0.22
    assert "figures from siege's summary" in m.notes


def test_log_line_alone():
    raw = RawOutput(files={"log": Path(__file__).parents[1] / "fixtures/siege/4.0.7-log.csv"})
    m = complete(siege.parse(raw))
    assert m.counts.requests_total == 2000 and m.counts.requests_ok == 2000
    assert m.rates.rps == 9090.91 and m.timing.duration_s == 0.22
    assert "figures from siege's log line" in m.notes


def test_a_404_is_not_a_success_whatever_siege_says():
    m = parse("4.0.7-404")
    assert m.counts.requests_total == 500
    assert m.counts.requests_ok == 0
    assert m.counts.failures.http == 500
    assert any("siege counted them as transactions and as available" in n for n in m.notes)
    status, error = ok(m)
    assert status is Status.FAILED and "500 http" in error


def test_all_refused_is_a_failure_though_siege_exits_0():
    m = parse("4.0.7-refused")
    assert m.counts.requests_total == 50 and m.counts.requests_ok == 0
    assert m.counts.failures.connect == 50 and m.counts.failures.other == 0
    assert ok(m)[0] is Status.FAILED


def test_resets_are_classed_from_the_error_lines():
    m = parse("4.0.7-reset")
    assert m.counts.requests_total == 10
    f = m.counts.failures
    assert (f.connect, f.read, f.reset, f.other) == (3, 0, 7, 0)


def test_verbose_lines_give_status_codes():
    m = parse("4.0.7-post-verbose")
    assert set(m.counts.status_codes) == {405}
    assert sum(m.counts.status_codes.values()) == m.counts.requests_total


def test_the_published_flask_study_output_parses():
    m = parse("4.0.4-seed-gunicorn-w1-sync-c1000")
    assert m.counts.requests_total == 10000 and m.rates.rps == 657.46 and m.timing.duration_s == 15.21


def test_no_summary_is_a_parse_error_that_quotes_siege():
    with pytest.raises(ParseError, match="no summary"):
        siege.parse(RawOutput(stdout="", stderr="** SIEGE 4.0.7\n", source="x"))
    with pytest.raises(ParseError, match="siege said: socket: unable to connect"):
        siege.parse(RawOutput(stderr="[error] socket: unable to connect sock.c:282: Connection refused\n"))


def cell(**changes) -> Cell:
    base = dict(scenario="s", tool="siege", concurrency=300, keepalive=False, repetition=1,
                request=RequestSpec(), stop=StopSpec(duration_s=2.5), timeout_s=40, url="http://127.0.0.1:8080/")
    base.update(changes)
    return Cell(**base)


FOUND = Found("/opt/siege/bin/siege", "4.0.7")


def test_build_writes_its_own_siegerc_and_never_uses_g(tmp_path):
    inv = siege.ADAPTER.build(cell(), tmp_path, FOUND)
    assert inv.argv[:3] == ["/opt/siege/bin/siege", "-R", "siegerc"]  # the path detection found
    assert "-g" not in inv.argv and "--get" not in inv.argv
    rc = inv.files["siegerc"]
    assert "connection = close" in rc and "limit = 300" in rc and "json_output = true" in rc
    assert "logging = false" in rc
    assert inv.argv[inv.argv.index("-t") + 1] == "3S"  # siege takes whole seconds
    assert list(tmp_path.iterdir()) == []


def test_build_requests_and_post(tmp_path):
    req = RequestSpec(method="POST", body='{"a":1}', content_type="application/json")
    inv = siege.ADAPTER.build(cell(concurrency=10, keepalive=True, request=req, stop=StopSpec(requests=95)), tmp_path,
                              FOUND)
    assert inv.argv[inv.argv.index("-r") + 1] == "10"  # repetitions per user
    assert inv.argv[-1] == "http://127.0.0.1:8080/ POST <body"  # from the file toolbench writes
    assert inv.files["body"] == '{"a":1}'
    assert "connection = keep-alive" in inv.files["siegerc"]


def test_fidelity_marks_what_toolbench_derived():
    m = parse("4.0.7-benchmark-j")
    assert m.fidelity["counts.requests_total"] is Fidelity.DERIVED
    assert m.fidelity["rates.rps_derived"] is Fidelity.DERIVED
    assert "rates.rps" not in m.fidelity  # reported by the tool itself


def test_build_requests_per_connection_is_sieges_own_r(tmp_path):
    inv = siege.ADAPTER.build(cell(concurrency=7, stop=StopSpec(requests_per_connection=3)), tmp_path, FOUND)
    assert inv.argv[inv.argv.index("-r") + 1] == "3" and "-t" not in inv.argv
    assert siege.ADAPTER.supports(cell(stop=StopSpec(requests_per_connection=3))).ok


def test_a_live_run_of_r_sends_n_requests_per_connection(tmp_path, nginx):
    if shutil.which("siege") is None:
        pytest.skip("siege is not installed")
    c = cell(concurrency=4, keepalive=True, stop=StopSpec(requests_per_connection=5), url=nginx.base_url + "/")
    found = siege.ADAPTER.detect(LocalHost())
    assert isinstance(found, Found), found
    inv = siege.ADAPTER.build(c, tmp_path, found)
    for name, content in inv.files.items():
        (tmp_path / name).write_text(content)
    done = subprocess.run(inv.argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    files = {role: tmp_path / name for role, name in inv.outputs.items() if (tmp_path / name).exists()}
    m = siege.ADAPTER.parse(RawOutput(stdout=done.stdout, stderr=done.stderr, exit_code=done.returncode,
                                      files=files, source=str(tmp_path)))
    assert m.counts.requests_total == 4 * 5 and m.counts.requests_failed == 0


def test_a_response_time_above_the_longest_transaction_is_no_mean_and_is_left_out():
    # Recorded from study 000's quick run: nginx's limit_req answered 1914 of 2000 with 503.
    m = parse("4.0.7-limit-req-503")
    assert m.counts.requests_ok == 86 and m.counts.requests_failed == 1914
    assert m.latency.mean_ms is None and m.latency.max_ms == 360.0
    assert any("is no mean and is left out" in n for n in m.notes)


@pytest.mark.parametrize("case", ["4.0.4-seed-gunicorn-w1-sync-c1000", "4.0.7-benchmark-j", "4.0.7-refused"])
def test_siege_own_concurrency_and_availability_are_kept(case):
    m = invariants.check(parse(case))
    text = (FIXTURES / f"{case}.txt").read_text() + _stderr(case)
    assert m.siege.concurrency == _figure(text, "concurrency")
    assert m.siege.availability_pct == _figure(text, "availability")


def _stderr(case: str) -> str:
    path = FIXTURES / f"{case}.stderr.txt"
    return path.read_text() if path.exists() else ""


def _figure(text: str, name: str) -> float:
    """The figure as the recording prints it, in its text or its JSON form."""
    m = re.search(rf'(?im)^\s*"?{name}"?:\s+([\d.]+)', text)
    assert m, name
    return float(m.group(1))


FIXTURES = Path(__file__).parents[1] / "fixtures" / "siege"


def test_siegerc_failures_is_finite_and_set_by_the_scenario(tmp_path: Path):
    assert "failures = 1024\n" in siege.ADAPTER.build(cell(), tmp_path, FOUND).files["siegerc"]
    assert "failures = 50\n" in siege.ADAPTER.build(cell(options={"failures": 50}), tmp_path, FOUND).files["siegerc"]


def _log_parts(log: str) -> list:
    """Each run of a log, read as `toolbench parse` reads it: one result per line."""
    from toolbench.cli.commands import results_of

    path = Path(__file__).parents[1] / "fixtures/siege" / log
    return [r.measurement for r in results_of(siege.ADAPTER, str(path.with_suffix("")), [path])]


def test_a_log_line_of_zero_transactions_with_nan_is_a_run_and_the_rest_is_read():
    text = (Path(__file__).parents[1] / "fixtures/siege/4.0.7-log-zero.csv").read_text()
    assert text.count("-nan") == 5  # siege's own: 4 in the refused run's line, 1 in the silent one's
    first, refused, silent, last = _log_parts("4.0.7-log-zero.csv")
    assert (first.counts.requests_total, last.counts.requests_total) == (100, 200)
    assert not any("no number" in note for note in first.notes + last.notes)
    # Refused: 0 transactions and 10 failed; what siege could not divide is absent, and said.
    assert (refused.counts.requests_total, refused.counts.requests_ok, refused.counts.requests_failed) == (10, 0, 10)
    assert refused.latency.mean_ms is None and refused.rates.rps is None
    assert refused.transfer.received_bytes_per_s is None and refused.siege.concurrency is None
    assert ("the log line holds no number for Resp Time, Trans Rate, Throughput, Concurrent (-nan; siege "
            "divides by the run's 0 transactions): left absent") in refused.notes
    assert ok(refused)[0] is Status.FAILED
    # Silent: nothing answered, nothing failed within 1.12 s; its rate is siege's 0.00, its time -nan.
    assert silent.counts.requests_total == 0 and silent.timing.duration_s == 1.12
    assert silent.latency.mean_ms is None and silent.rates.rps == 0.0
    assert any("no number for Resp Time (-nan" in note for note in silent.notes)
    assert ok(silent)[0] is Status.FAILED


def test_a_count_that_is_nan_is_still_refused(tmp_path: Path):
    # A mutation of the recorded log: a count siege never writes as nan.
    text = (Path(__file__).parents[1] / "fixtures/siege/4.0.7-log-zero.csv").read_text()
    (tmp_path / "log.csv").write_text(text.replace("-nan,       0,      10", "-nan,       0,    -nan"))
    with pytest.raises(ParseError, match="failed_transactions"):
        siege.parse(RawOutput(files={"log": tmp_path / "log.csv"}, part="run2", source="log"))
