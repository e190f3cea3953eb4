"""The engine adapter: pure build() and parse() over recorded engine output, and the
engine's own pieces that need no network (options, request bytes, merging, notes)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, recorded
from toolbench.adapters.engine import ADAPTER
from toolbench.contract import registry
from toolbench.contract.adapter import Found
from toolbench.contract.cell import Cell
from toolbench.engine.options import EngineError, EngineOptions, Target, parse_duration, request_bytes, split, validate
from toolbench.engine.recorder import Recorder
from toolbench.errors import ParseError
from toolbench.record import histogram
from toolbench.record.schema import Fidelity, RunResult
from toolbench.report import fmt
from toolbench.report.context import Context, RunView
from toolbench.report.latency import percentiles_section
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

ENGINE_FIXTURES = FIXTURES / "engine"


def cell(**kw: object) -> Cell:
    base: dict[str, object] = dict(scenario="s", tool="engine", concurrency=8, keepalive=True, repetition=1,
                                   request=RequestSpec(), stop=StopSpec(duration_s=5.0), timeout_s=60.0,
                                   url="http://127.0.0.1:8080/")
    base.update(kw)
    return Cell(**base)  # type: ignore[arg-type]


def test_registered_as_an_entry_point() -> None:
    assert registry.get("engine") is ADAPTER


FOUND = Found("/opt/py/bin/python3", "0.1.0")  # a Python on the generator, not this one


def test_build_closed_keepalive() -> None:
    inv = ADAPTER.build(cell(), Path("/w"), FOUND)
    assert inv.argv[:4] == ["/opt/py/bin/python3", "-m", "toolbench.engine", "http://127.0.0.1:8080/"]
    assert inv.argv[4:6] == ["-c", "8"] and ["-d", "5s"] == inv.argv[inv.argv.index("-d"):][:2]
    assert "--no-keepalive" not in inv.argv and "--rate" not in inv.argv
    assert inv.outputs == {"json": "engine.json"} and inv.files == {}


def test_build_open_model_no_keepalive_body_and_options() -> None:
    req = RequestSpec(method="POST", headers={"X-A": "1"}, body='{"a": 1}', content_type="application/json")
    inv = ADAPTER.build(cell(keepalive=False, rate_rps=250.0, request=req, stop=StopSpec(requests=1000),
                             options={"workers": 2, "timeout_s": 3, "warmup_s": 1}), Path("/w"), FOUND)
    argv = inv.argv
    assert ["-n", "1000"] == argv[argv.index("-n"):][:2] and "-d" not in argv
    assert ["--rate", "250"] == argv[argv.index("--rate"):][:2] and "--no-keepalive" in argv
    assert ["-w", "2"] == argv[argv.index("-w"):][:2] and ["--timeout", "3"] == argv[argv.index("--timeout"):][:2]
    assert ["--method", "POST"] == argv[argv.index("--method"):][:2]
    assert "X-A: 1" in argv and "Content-Type: application/json" in argv
    assert inv.files == {"body": '{"a": 1}'} and ["--body", "body"] == argv[argv.index("--body"):][:2]


def test_supports_every_cell() -> None:
    assert ADAPTER.supports(cell(rate_rps=10.0, keepalive=False)).ok


def test_parse_keepalive_run() -> None:
    m = ADAPTER.parse(recorded("engine", "0.1.0-keepalive", json="json"))
    assert m.tool == "engine" and m.tool_version == "0.1.0" and m.concurrency == 10
    assert m.counts.requests_total and m.counts.requests_total == m.counts.requests_ok
    assert m.counts.failures.connect == 0 and m.counts.status_codes == {200: m.counts.requests_total}
    assert histogram.decode(m.histogram).get_total_count() == m.counts.requests_total
    assert m.latency.percentiles.p99_ms and m.latency.connect_mean_ms and m.latency.ttfb_mean_ms
    assert m.fidelity["latency.percentiles.p50_ms"] is Fidelity.REPORTED
    assert m.fidelity["rates.rps_derived"] is Fidelity.DERIVED
    assert m.series and m.timing.duration_s == pytest.approx(2.0, abs=0.05)
    assert m.counts.connections_opened == 10  # keep-alive: one per connection
    assert m.latency_uncorrected is None and m.histogram_uncorrected is None  # closed model


def test_parse_open_model_keeps_the_uncorrected_figures() -> None:
    m = ADAPTER.parse(recorded("engine", "0.1.0-open", json="json"))
    unc = m.latency_uncorrected
    assert unc is not None and unc.percentiles.p99_ms <= m.latency.percentiles.p99_ms
    assert unc.mean_ms <= m.latency.mean_ms and unc.resolution_ms == 0.001
    assert histogram.decode(m.histogram_uncorrected).get_total_count() == m.counts.requests_ok
    assert m.fidelity["latency_uncorrected"] is Fidelity.REPORTED
    assert m.counts.connections_opened == 4 and m.fidelity["counts.connections_opened"] is Fidelity.REPORTED


def test_the_report_shows_the_uncorrected_latency_beside_the_corrected() -> None:
    results = [RunResult.from_dict(json.loads((ENGINE_FIXTURES / f"0.1.0-{case}.json").read_text()))
               for case in ("open", "keepalive")]
    ctx = Context.of([RunView(name="r", label="", href=".", manifest={}, results=results)])
    notes = {row.values[0].text + " " + row.values[1].text: row.note
             for row in percentiles_section(ctx).tables[0].rows}
    unc = results[0].measurement.latency_uncorrected
    assert unc is not None and unc.percentiles.p99_ms is not None
    assert notes["engine workers=1 open 500/s on"].startswith("Open model:")
    assert f"p99 {fmt.number(unc.percentiles.p99_ms, 0.001)} ms" in notes["engine workers=1 open 500/s on"]
    assert notes["engine workers=2 on"] == ""  # closed model: nothing to add


def test_parse_a_refused_run_and_stdout_json() -> None:
    m = ADAPTER.parse(recorded("engine", "0.1.0-refused", json="json"))
    assert m.counts.requests_total is None and any("refused" in n.lower() for n in m.notes)
    stdout = (ENGINE_FIXTURES / "0.1.0-404-stdout.json").read_text()
    m = ADAPTER.parse(recorded("engine", "0.1.0-404-stdout").__class__(stdout=stdout))
    assert m.counts.status_codes == {404: 50} and m.counts.failures.http_4xx == 50


def test_parse_garbage_raises_parse_error() -> None:
    raw = recorded("engine", "0.1.0-keepalive")  # stdout is the human summary, no JSON file
    with pytest.raises(ParseError):
        ADAPTER.parse(raw)
    with pytest.raises(ParseError):
        ADAPTER.parse(raw.__class__(stdout='{"identity": 3}'))


def test_classify() -> None:
    assert ADAPTER.classify(Path("x.json"), '{"identity": {}}') == "json"
    assert ADAPTER.classify(Path("x.txt"), "Running 2s test") == "stdout"


def test_request_bytes_and_options() -> None:
    target = Target(host="example:8080", address="127.0.0.1", port=8080, path="/a?b=1")
    opts = EngineOptions(url="http://example:8080/a?b=1", connections=1, requests=1, method="PUT",
                         headers=(("X-Y", "z"), ("Host", "other")), body=b"abc", keepalive=False)
    raw = request_bytes(opts, target)
    assert raw.startswith(b"PUT /a?b=1 HTTP/1.1\r\n") and raw.endswith(b"\r\n\r\nabc")
    assert b"Host: other\r\n" in raw and b"Host: example" not in raw
    assert b"Content-Length: 3\r\n" in raw and b"Connection: close\r\n" in raw
    assert parse_duration("1.5s") == 1.5 and parse_duration("250ms") == 0.25 and parse_duration("2m") == 120
    assert split(10, 3) == [4, 3, 3]
    with pytest.raises(EngineError):
        validate(EngineOptions(url="http://x/", connections=1))  # neither -d nor -n
    with pytest.raises(EngineError):
        validate(EngineOptions(url="http://x/", connections=1, requests=1, method="GE T"))


def test_recorder_flush_is_exact() -> None:
    """Batch recording (grouped by µs, both code paths) equals recording one by one."""
    for n in (100, 10_000):  # below and above the numpy threshold
        rec = Recorder(open_model=False)
        values_ns = [(i * 7919) % 50_000_000 + 1_000 for i in range(n)]
        rec.lat.extend(values_ns)
        sample = rec.flush(0)
        direct = histogram.new()
        for v in values_ns:
            direct.record_value((v + 500) // 1000)
        assert histogram.encode(rec.histograms()[0]) == histogram.encode(direct)
        assert sample.responses == n and sample.max_us == (max(values_ns) + 500) // 1000
        values_us = [(v + 500) // 1000 for v in values_ns]
        assert rec.moments.sum_us == sum(values_us) and rec.moments.sumsq_us == sum(v * v for v in values_us)
        assert rec.moments.min_us == min(values_us) and rec.moments.max_us == max(values_us)
        assert len(rec.lat) == 0


def test_build_requests_per_connection_is_a_total_of_concurrency_times_n(tmp_path: Path):
    inv = ADAPTER.build(cell(concurrency=8, stop=StopSpec(requests_per_connection=10)), tmp_path, FOUND)
    assert inv.argv[inv.argv.index("-n") + 1] == "80" and "-d" not in inv.argv
