"""JMeter's adapter over output recorded from the real JMeter 5.6.3, 3.3 and Debian's 2.13
(commands in fixtures/jmeter/README.md), and its test plans and command lines."""
import json
import subprocess
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, recorded
from toolbench.adapters.jmeter import adapter as jmeter
from toolbench.adapters.jmeter import jtl as jmeter_jtl
from toolbench.adapters.jmeter import plan as jmeter_plan
from toolbench.adapters.jmeter import reader as jmeter_reader
from toolbench.adapters.jmeter.reader import read_jtl
from toolbench.contract.adapter import Found, Missing
from toolbench.contract.cell import Cell
from toolbench.contract.host import Captured
from toolbench.errors import ParseError
from toolbench.hosts.local import LocalHost
from toolbench.record import histogram
from toolbench.record.derive import cell_status, complete
from toolbench.record.schema import Fidelity, Status
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

FOLDER = FIXTURES / "jmeter"


def parse(case: str, jtl: bool = True, stdout: bool = True):
    raw = recorded("jmeter", case, **({"jtl": "jtl"} if jtl else {}))
    if not stdout:
        raw = type(raw)(stderr=raw.stderr, exit_code=0, files=raw.files, source=case)
    return complete(jmeter.parse(raw))


def outcome(m) -> Status:
    return cell_status(m, 0, timed_out=False, interrupted=False, timeout_s=10, stderr="")[0]


def test_csv_jtl_with_the_5x_header():
    m = parse("5.6.3-csv")
    assert m.counts.requests_total == 2000 and m.counts.requests_ok == 2000 and m.counts.requests_failed == 0
    assert m.counts.status_codes == {200: 2000}
    assert m.counts.failures.connect == 0 and m.counts.failures.http_4xx == 0
    assert m.transfer.received_bytes == 2000 * 248 and m.transfer.sent_bytes == 2000 * 118
    assert m.timing.duration_s == 0.634  # first start to last end, from the timestamps
    assert m.latency.mean_ms == pytest.approx(1.048) and m.latency.max_ms == 50.0 and m.latency.min_ms == 0.0
    assert m.latency.ttfb_mean_ms == pytest.approx(1.0245) and m.latency.connect_mean_ms == pytest.approx(0.061)
    assert m.latency.resolution_ms == 1.0
    assert m.rates.rps == 2490.7  # the summariser's, as JMeter printed it
    assert histogram.decode(m.histogram).get_total_count() == 2000
    assert sum(s.requests for s in m.series) == 2000 and m.series[0].second == 0
    assert m.url == "http://127.0.0.1:18090/" and m.concurrency == 4
    assert m.fidelity["histogram"] is Fidelity.DERIVED and "rates.rps" not in m.fidelity
    assert outcome(m) is Status.OK


def test_keepalive_off_pays_connects():
    on, off = parse("5.6.3-csv"), parse("5.6.3-csv-nokeepalive")
    assert off.counts.requests_total == 2000 and off.transfer.received_bytes == 2000 * 243
    assert off.latency.connect_mean_ms == pytest.approx(0.679) and on.latency.connect_mean_ms < 0.1


def test_xml_and_headerless_csv_of_the_same_plan_agree():
    xml, csv_ = parse("5.6.3-xml"), parse("5.6.3-csv-noheader")
    for m in (xml, csv_):
        assert m.counts.requests_total == 400 and m.counts.requests_ok == 400
        assert m.counts.status_codes == {200: 400}
        assert m.transfer.received_bytes == 400 * 248 and m.transfer.sent_bytes == 400 * 118
        assert m.histogram is not None and m.latency.ttfb_mean_ms is not None
        assert m.url == "http://127.0.0.1:18090/" and m.concurrency == 4
    assert xml.latency.mean_ms == pytest.approx(2.34) and xml.timing.duration_s == 0.311
    assert csv_.latency.mean_ms == pytest.approx(1.525) and csv_.timing.duration_s == 0.186
    assert any("xml" in note for note in xml.notes) and any("without header" in n for n in csv_.notes)


@pytest.mark.parametrize("case", ["5.6.3-refused", "5.6.3-refused-java"])
def test_refused_connections_are_connect_failures(case):
    m = parse(case)
    assert m.counts.requests_total == 200 and m.counts.requests_ok == 0
    assert m.counts.failures.connect == 200 and m.counts.failures.other == 0
    assert m.counts.status_codes == {}
    # `bytes` of a refused sample is JMeter's stack trace (2587 or 1926), not a response.
    assert m.transfer.received_bytes == 0
    assert m.latency.ttfb_mean_ms is None  # no sample got a response
    status, error = cell_status(m, 0, timed_out=False, interrupted=False, timeout_s=10, stderr="")
    assert status is Status.FAILED and "200 connect" in error


def test_404_is_an_http_4xx_failure():
    m = parse("5.6.3-404")
    assert m.counts.requests_total == 400 and m.counts.requests_ok == 0
    assert m.counts.failures.http_4xx == 400 and m.counts.status_codes == {404: 400}
    assert m.transfer.received_bytes == 400 * 308
    assert outcome(m) is Status.FAILED


def test_quoted_failure_messages_with_commas():
    m = parse("5.6.3-assertion")
    assert m.counts.requests_total == 400 and m.counts.requests_ok == 68
    assert m.counts.failures.other == 332  # HTTP 200, failed by the Duration Assertion
    assert m.counts.status_codes == {200: 400}
    assert outcome(m) is Status.OK


def test_fast_and_slow_paths_and_block_sizes_give_the_same_figures(monkeypatch):
    """The quoted records go through the csv module, the rest through numpy; cutting the
    file into many blocks must not change a figure."""
    whole = read_jtl(FOLDER / "5.6.3-assertion.jtl").aggregate
    monkeypatch.setattr(jmeter_jtl, "SLOW_SHARE", 10**9)  # never all-slow: fast runs between quoted rows
    monkeypatch.setattr(jmeter_jtl, "BLOCK", 997)
    split = read_jtl(FOLDER / "5.6.3-assertion.jtl").aggregate
    assert (split.rows, split.ok, split.classes, split.received, split.sent) == \
        (whole.rows, whole.ok, whole.classes, whole.received, whole.sent)
    assert (split.times.tally == whole.times.tally).all() and split.latency == whole.latency
    assert split.series() == whole.series()


@pytest.mark.parametrize("threaded", [False, True], ids=["forked", "spawned"])
@pytest.mark.parametrize("case", ["5.6.3-csv", "5.6.3-assertion", "5.6.3-csv-truncated", "5.6.3-no-final-newline",
                                  "5.6.3-subresults-csv"])
def test_reading_in_worker_processes_gives_the_same_figures(monkeypatch, case, threaded):
    one_pass = read_jtl(FOLDER / f"{case}.jtl")
    monkeypatch.setattr(jmeter_reader, "MIN_BYTES", 0)
    monkeypatch.setattr(jmeter_reader, "workers", lambda: 3)
    # Workers fork where this process has one thread, and are spawned beside another (the
    # runner's monitor): both ways read the same.
    release = threading.Event()
    other = threading.Thread(target=release.wait, daemon=True)
    if threaded:
        other.start()
    else:  # a thread an earlier test left behind must not turn this case into the other
        monkeypatch.setattr(jmeter_reader.threading, "active_count", lambda: 1)
    try:
        assert jmeter_reader._context().get_start_method() == ("spawn" if threaded else "fork")
        split = read_jtl(FOLDER / f"{case}.jtl")
    finally:
        release.set()
        if threaded:
            other.join()
    a, b = one_pass.aggregate, split.aggregate
    assert (b.rows, b.ok, b.classes, b.status_codes(), b.received, b.sent, b.latency, b.connect) == \
        (a.rows, a.ok, a.classes, a.status_codes(), a.received, a.sent, a.latency, a.connect)
    assert (b.elapsed_stats(), b.duration_s(), b.series(), split.notes, split.url) == \
        (a.elapsed_stats(), a.duration_s(), a.series(), one_pass.notes, one_pass.url)


def test_a_malformed_line_found_by_a_worker_keeps_its_line_number(monkeypatch):
    monkeypatch.setattr(jmeter_reader, "MIN_BYTES", 0)
    monkeypatch.setattr(jmeter_reader, "workers", lambda: 2)
    with pytest.raises(ParseError, match=r"5.6.3-appended.jtl\): line 1123: 27 fields"):
        read_jtl(FOLDER / "5.6.3-appended.jtl")


def test_whatever_breaks_inside_the_reader_is_a_parse_error(monkeypatch, tmp_path):
    lines = (FOLDER / "5.6.3-csv.jtl").read_text().splitlines(keepends=True)
    # The second half 40 days later: each half alone is a run, merged they are not.
    later = [str(int(line.split(",", 1)[0]) + 40 * 86400_000) + "," + line.split(",", 1)[1] for line in lines[1001:]]
    (tmp_path / "apart.jtl").write_text("".join(lines[:1001] + later))
    (tmp_path / "cr.jtl").write_text("\r1,2\n3,4\n")  # the csv module refuses a bare CR in a header
    (tmp_path / "folder.jtl").mkdir()
    monkeypatch.setattr(jmeter_reader, "MIN_BYTES", 0)
    monkeypatch.setattr(jmeter_reader, "workers", lambda: 2)
    for name, message in (("apart", "timeStamp: they span more than"), ("cr", "unreadable JTL: Error: new-line"),
                          ("folder", "cannot read the JTL: Is a directory"), ("absent", "No such file")):
        with pytest.raises(ParseError, match=f"jmeter: cannot parse output \\(.*{name}.jtl\\): .*{message}"):
            read_jtl(tmp_path / f"{name}.jtl")


def test_jmeter_33_csv_has_no_url_column():
    m = parse("3.3-csv")
    assert m.counts.requests_total == 2000 and m.counts.requests_ok == 2000
    assert m.transfer.received_bytes == 2000 * 248 and m.transfer.sent_bytes == 2000 * 117
    assert m.url is None and m.rates.rps == 2214.8


def test_summariser_alone():
    m = parse("5.6.3-summariser", jtl=False)
    assert m.counts.requests_total == 570211 and m.counts.requests_failed == 0
    assert m.rates.rps == 28446.5
    assert m.timing.duration_s == pytest.approx(570211 / 28446.5)
    assert m.latency.mean_ms == 0.0 and m.latency.max_ms == 29.0 and m.latency.resolution_ms == 1.0
    assert m.histogram is None and m.counts.failures.connect is None  # absent, not 0
    short = parse("5.6.3-summariser-4s", jtl=False)
    assert short.counts.requests_total == 3356 and short.rates.rps == 824.6
    one_line = parse("5.6.3-csv", jtl=False)  # a run with a `summary =` line only
    assert one_line.counts.requests_total == 2000 and one_line.latency.max_ms == 50.0


def test_a_cut_off_last_line_is_left_out_with_a_note():
    m = parse("5.6.3-csv-truncated", stdout=False)
    assert m.counts.requests_total == 1121
    assert any("last line (1123) is cut off" in note for note in m.notes)
    xml = parse("5.6.3-xml-truncated", stdout=False)
    assert xml.counts.requests_total == 226 and any("cut off at line 682" in note for note in xml.notes)


def test_a_malformed_line_in_the_middle_names_its_line():
    with pytest.raises(ParseError, match=r"line 1123: 27 fields where the header has 17"):
        parse("5.6.3-appended")


def test_an_unknown_column_set_names_the_columns():
    with pytest.raises(ParseError, match=r"unknown JTL column set \['timeStamp', 'elapsed'.*lacks success"):
        parse("5.6.3-nosuccess")


def test_debian_213_run_is_an_error_not_an_empty_result():
    with pytest.raises(ParseError, match="ForbiddenClassException.*Debian's JMeter 2.13 cannot run test plans"):
        parse("2.13-debian-run", jtl=False)


def test_a_jmeter_that_could_not_start_is_an_error():
    with pytest.raises(ParseError, match="could not start: An error occurred: null"):
        parse("3.3-java-jar-no-opens", jtl=False)
    with pytest.raises(ParseError, match="no JTL and no summariser line"):
        jmeter.parse(recorded("jmeter", "5.6.3-version"))


def test_versions_from_the_banners():
    assert jmeter.parse_version((FOLDER / "5.6.3-version.txt").read_text()) == "5.6.3"
    assert jmeter.parse_version((FOLDER / "3.3-version.txt").read_text()) == "3.3"
    assert jmeter.parse_version((FOLDER / "2.13-debian-version.txt").read_text()) == "2.13"


class RecordedHost(LocalHost):
    """This machine, except that `jmeter` answers as Debian's recorded 2.13 did (the package
    cannot stay installed here)."""

    def which(self, program: str) -> str | None:
        return "/usr/bin/jmeter" if program == "jmeter" else super().which(program)

    def capture(self, argv: list[str], timeout_s: float = 10.0) -> Captured:
        assert argv[:2] == ["/usr/bin/jmeter", "--version"]
        return Captured(0, (FOLDER / "2.13-debian-version.txt").read_text(), "")


def test_detect_explains_debians_213(monkeypatch, tmp_path):
    monkeypatch.setenv("TOOLBENCH_TOOLS", str(tmp_path))  # no JMeter of ours: PATH's is the one found
    monkeypatch.delenv("TOOLBENCH_JMETER_HOME", raising=False)
    if LocalHost().which("java") is None:
        pytest.skip("no java here")
    found = jmeter.ADAPTER.detect(RecordedHost())
    assert isinstance(found, Missing)
    assert "/usr/bin/jmeter is JMeter 2.13: Debian's JMeter 2.13 cannot run test plans on Debian 12" in found.reason


def installed() -> Path:
    homes = sorted((REPO / ".tools").glob("jmeter-5.*/bin/jmeter"))
    if not homes:
        pytest.skip("JMeter 5.x is not installed (`toolbench install jmeter` installs it into .tools/)")
    return homes[-1]


def test_detect_finds_the_installed_jmeter_and_says_when_java_is_missing(monkeypatch):
    path = installed()
    monkeypatch.delenv("TOOLBENCH_TOOLS", raising=False)
    monkeypatch.delenv("TOOLBENCH_JMETER_HOME", raising=False)
    assert jmeter.locate(LocalHost()) == str(path)
    found = jmeter.ADAPTER.detect(LocalHost())
    assert found == Found(str(path), path.parent.parent.name[len("jmeter-"):])
    assert jmeter.ADAPTER.build(cell(), Path("."), found).argv[0] == str(path)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    missing = jmeter.ADAPTER.detect(LocalHost())
    assert isinstance(missing, Missing)
    assert "needs Java: no `java` on the PATH of local and no JAVA_HOME" in missing.reason


def test_tools_shows_the_installed_version():
    path = installed()
    done = subprocess.run([str(REPO / ".venv" / "bin" / "toolbench"), "tools"], capture_output=True, text=True,
                          timeout=120)
    line = next(line for line in done.stdout.splitlines() if line.startswith("jmeter"))
    assert line.split()[1] == path.parent.parent.name[len("jmeter-"):]


def test_cli_parses_a_jtl_with_its_stdout():
    files = [FOLDER / "5.6.3-csv.jtl", FOLDER / "5.6.3-csv.txt"]
    done = subprocess.run([str(REPO / ".venv" / "bin" / "toolbench"), "parse", "--tool", "jmeter", *map(str, files)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (record,) = json.loads(done.stdout)
    assert record["measurement"]["counts"]["requests_total"] == 2000 and record["measurement"]["rates"]["rps"] == 2490.7
    assert record["outcome"]["status"] == "ok"
    bad = subprocess.run([str(REPO / ".venv" / "bin" / "toolbench"), "parse", "--tool", "jmeter",
                          str(FOLDER / "5.6.3-appended.jtl")], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "line 1123" in bad.stderr


# ---- plans and command lines ----

def cell(**changes) -> Cell:
    base = dict(scenario="s", tool="jmeter", concurrency=4, keepalive=True, repetition=1, request=RequestSpec(),
                stop=StopSpec(duration_s=3), timeout_s=60, url="http://127.0.0.1:8080/")
    base.update(changes)
    return Cell(**base)


def plan_of(c: Cell) -> ET.Element:
    return ET.fromstring(jmeter_plan.test_plan(c).encode())


def prop(root: ET.Element, name: str) -> str | None:
    found = root.find(f".//*[@name='{name}']")
    return found.text if found is not None else None


def test_plan_for_a_timed_cell():
    root = plan_of(cell(concurrency=7))
    assert prop(root, "ThreadGroup.num_threads") == "7" and prop(root, "ThreadGroup.ramp_time") == "0"
    assert prop(root, "ThreadGroup.scheduler") == "true" and prop(root, "ThreadGroup.duration") == "3"
    assert prop(root, "LoopController.loops") == "-1"
    assert prop(root, "HTTPSampler.use_keepalive") == "true"
    assert prop(root, "HTTPSampler.implementation") == "HttpClient4"
    assert (prop(root, "HTTPSampler.domain"), prop(root, "HTTPSampler.port"), prop(root, "HTTPSampler.path")) == \
        ("127.0.0.1", "8080", "/")
    assert root.find(".//HeaderManager") is None


def test_plan_for_a_request_count_rounds_up_and_says_so():
    text = jmeter_plan.test_plan(cell(stop=StopSpec(requests=10), concurrency=4, keepalive=False))
    root = ET.fromstring(text.encode())
    assert prop(root, "LoopController.loops") == "3" and prop(root, "ThreadGroup.scheduler") == "false"
    assert "10 requests asked, rounded up" in text and "12" in text
    assert prop(root, "HTTPSampler.use_keepalive") == "false"
    assert "rounded" not in jmeter_plan.test_plan(cell(stop=StopSpec(requests=12), concurrency=4))


def test_plan_carries_method_body_and_headers_escaped():
    req = RequestSpec(method="POST", path="/api?a=1&b=<2>", headers={"X-Token": 'a"b'}, body='{"k": "&"}',
                      content_type="application/json")
    root = plan_of(cell(request=req, url="https://example.test/api?a=1&b=<2>"))
    assert prop(root, "HTTPSampler.method") == "POST" and prop(root, "HTTPSampler.protocol") == "https"
    assert prop(root, "HTTPSampler.port") == "443" and prop(root, "HTTPSampler.path") == "/api?a=1&b=<2>"
    # The body is a file JMeter sends as it is, typed by its mimetype; it is not in the plan.
    assert prop(root, "File.path") == "body" and prop(root, "File.paramname") is None
    assert prop(root, "File.mimetype") == "application/json"
    headers = {h.find("*[@name='Header.name']").text: h.find("*[@name='Header.value']").text
               for h in root.iter("elementProp") if h.get("elementType") == "Header"}
    assert headers == {"X-Token": 'a"b'}
    assert jmeter.ADAPTER.build(cell(request=req), Path("."), FOUND).files["body"] == '{"k": "&"}'


def test_every_value_in_a_plan_is_literal_for_jmeter():
    evil = "${__groovy(1)}"
    req = RequestSpec(method="POST", path="/" + evil, headers={"X-" + "A": evil + "\\,$"}, body=evil)
    text = jmeter_plan.test_plan(cell(request=req, url="http://127.0.0.1:8080/" + evil))
    assert "${__groovy" not in text and "__groovy(1)" in text
    root = ET.fromstring(text.encode())
    assert prop(root, "Header.value") == "${__char(36)}{__groovy(1)}\\\\,${__char(36)}"
    assert jmeter_plan.jmx_value("a\\b $x") == "a\\b $x"  # without `${` JMeter reads it as it is
    assert jmeter_plan.jmx_value('<&"\'\n>') == "&lt;&amp;&quot;&apos;&#10;&gt;"


FOUND = Found("/opt/jmeter/bin/jmeter", "5.6.3")


def test_command_line_outputs_and_heap():
    inv = jmeter.ADAPTER.build(cell(options={"heap": "512m"}), Path("."), FOUND)
    assert inv.argv[0] == "/opt/jmeter/bin/jmeter"  # the path detection found
    assert inv.argv[1:8] == ["-n", "-t", "plan.jmx", "-l", "results.jtl", "-j", "jmeter.log"]
    assert "-Jjmeter.save.saveservice.output_format=csv" in inv.argv
    assert "-Jjmeter.save.saveservice.connect_time=true" in inv.argv
    assert "-Jjmeter.save.saveservice.timestamp_format=ms" in inv.argv
    assert inv.outputs == {"jtl": "results.jtl", "log": "jmeter.log"} and "plan.jmx" in inv.files
    assert inv.env["JMETER_HEAP"].startswith("-Xms512m -Xmx512m") and inv.env["HEAP"] == inv.env["JMETER_HEAP"]
    assert inv.env["JMETER_HEAP"].split()[-1] == "-XX:TieredStopAtLevel=1"  # C1 only: see jmeter.JIT


def test_the_jit_flag_is_the_scenarios_option_c1_by_default_and_said_in_the_ramp():
    c1 = jmeter.ADAPTER.build(cell(options={"jit": "c1"}), Path("."), FOUND).env["JMETER_HEAP"]
    default = jmeter.ADAPTER.build(cell(options={"jit": "default"}), Path("."), FOUND).env["JMETER_HEAP"]
    assert "-XX:TieredStopAtLevel=1" in c1 and "TieredStopAtLevel" not in default
    assert jmeter.ADAPTER.option_choices["jit"] == ("c1", "default")
    assert jmeter.ADAPTER.ramp_s(cell()) < jmeter.ADAPTER.ramp_s(cell(options={"jit": "default"}))


@pytest.mark.parametrize("changes, reason", [
    ({"rate_rps": 100.0}, "closed model"),
    ({"stop": StopSpec(duration_s=2.5)}, "whole seconds"),
    ({"request": RequestSpec(headers={"X-A": "a\x01"})}, "control characters"),
    ({"request": RequestSpec(method="GET", body="x")}, "body with POST"),
    ({"request": RequestSpec(method="CONNECT")}, "not CONNECT"),
    ({"options": {"heap": "lots"}}, "heap"),
])
def test_unsupported_cells_say_why(changes, reason):
    support = jmeter.ADAPTER.supports(cell(**changes))
    assert not support.ok and reason in support.reason
    assert jmeter.ADAPTER.supports(cell()).ok


def test_classify_roles():
    classify = jmeter.ADAPTER.classify
    assert classify(Path("r.jtl"), (FOLDER / "5.6.3-csv.jtl").read_text()[:500]) == "jtl"
    assert classify(Path("r.jtl"), (FOLDER / "5.6.3-csv-noheader.jtl").read_text()[:500]) == "jtl"
    assert classify(Path("r.xml"), (FOLDER / "5.6.3-xml.jtl").read_text()[:500]) == "jtl"
    assert classify(Path("run.txt"), (FOLDER / "5.6.3-csv.txt").read_text()) == "stdout"
    assert classify(Path("p.jmx"), (FOLDER / "5.6.3-csv.jmx").read_text()) == "plan"


def test_requests_per_connection_loops_each_thread_n_times():
    text = jmeter_plan.test_plan(cell(stop=StopSpec(requests_per_connection=7), concurrency=4))
    assert '<stringProp name="LoopController.loops">7</stringProp>' in text and "rounded" not in text
    assert jmeter.ADAPTER.supports(cell(stop=StopSpec(requests_per_connection=7))).ok
