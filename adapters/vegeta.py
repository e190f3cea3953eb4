"""vegeta (Go, `go install github.com/tsenart/vegeta/v12`): builds `vegeta attack`, and reads
its results through two steps run after it (toolbench.contract.adapter.Step): `vegeta encode --to csv`
(one row per request) and `vegeta report -type=json`.

What vegeta is, and what follows for its results:
- a rate cell is an open model: `-rate R/1s` sends on a fixed schedule; `-workers` starts the
  cell's concurrency of workers, and vegeta adds one whenever all are busy at a tick, without
  bound unless `tools.vegeta.max_workers` sets one (`-max-workers`): then the schedule slips
  when they are all busy, and catches up with a burst later;
- a cell without a rate is a closed model: `-rate 0 -workers C -max-workers C`, C workers each
  sending its next request when the last one ends;
- coordinated omission: a request is timed from the moment a worker takes its tick (the actual
  send), not from its place in the schedule (lib/attack.go, `hit`); with workers unbounded the
  two are close while the machine keeps up, with a bound a stalled send's wait is not counted.
  Not corrected; the achieved rate (`rates.rps`, vegeta's own: requests over the span of the
  sends) against the rate asked tells how well the schedule held;
- it stops on a duration only (no request count), and times every request, failed ones too,
  in nanoseconds; its report's percentiles are t-digest estimates, so toolbench takes the
  percentiles from the rows (exact times into the HDR histogram) and vegeta's own only when
  the rows are missing; min, mean and max, the counts by status, the bytes and the rate come
  from its report when there is one. Built by `go install`, its `-version` is empty:
  `toolbench install` puts it in .tools/go/vegeta-<version>/, and the folder's name says it;
- every protocol, through Go's net/http: HTTP/1.1 over TLS with `-http2=false` (its `-http2` is on
  by default and would take HTTP/2 whenever ALPN offers it), HTTP/2 over TLS by ALPN (`-http2`),
  HTTP/2 in clear with prior knowledge (`-h2c`). Over HTTP/2 Go puts every worker's requests on one
  connection (seen: one handshake for 4 workers); without keep-alive it opens one per request over
  TLS, but `-h2c` keeps its one connection whatever `-keepalive` says (seen: one for a whole run),
  so an h2c cell without keep-alive is not run. It checks the server's certificate, trusting the
  target's own (`-root-certs`); it does not resume TLS sessions (no `-session-tickets`). Its output
  says nothing of the protocol spoken.

`toolbench parse` reads, besides those two, `vegeta encode`'s JSON lines (its default) as rows, and
the text report (`vegeta report`, adapters/vegeta_text.py), several appended to one file as one
run each; it names the forms it does not read (the binary results file, `-type=hist[...]`,
`-type=hdrplot`) rather than say "no results"."""
from __future__ import annotations

import base64
import dataclasses
import json
import math
import re
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench.adapters import vegeta_results, vegeta_text, vegeta_workload
from toolbench.adapters.vegeta_results import Rows
from toolbench.contract.adapter import (CLASSIFY_CHARS, SUPPORTED, Adapter, Detection, Found, Invocation, RawOutput,
                                        Step, Support, found_go_tool, option)
from toolbench.contract.recipe import TESTS, GoModule, Install
from toolbench.errors import AdapterError, ParseError
from toolbench.record import failures
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Fidelity, Measurement, Percentiles, RequestFigures
from toolbench.record.timings import SecondTally

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

TARGETS_FILE = "targets.json"
RESULTS_FILE = "results.bin"
CSV_FILE = "results.csv"
REPORT_FILE = "report.json"
RESOLUTION_MS = vegeta_results.RESOLUTION_MS
_VERSION = re.compile(r"^Version: *v?(\S*)", re.MULTILINE)
_REPORT_HEAD = re.compile(r'\{\s{0,20}"latencies":')  # as vegeta writes it, or indented as its README shows it
_ROW = re.compile(r"\d{1,19},\d{1,5},\d{1,20},\d{1,20},\d{1,20},")


class VegetaAdapter(Adapter):
    name = "vegeta"
    install = Install((GoModule("github.com/tsenart/vegeta/v12", "12.13.0", "vegeta"),), TESTS)
    # max_workers: a bound on the workers of a rate cell (default none); timeout_s: per request.
    option_types = {"timeout_s": int, "max_workers": int}
    protocols = frozenset({"http1", "https", "h2", "h2c"})
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = "vegeta checks the server's certificate, trusting the target's own (-root-certs)"
    workload_features = vegeta_workload.FEATURES

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return found_go_tool(host, path, "vegeta", ["-version"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.stop.duration_s is None:
            return Support(False, "vegeta stops on a duration only (-duration): it has no request count")
        if option(cell, "max_workers", 1) < 1:
            return Support(False, "tools.vegeta.max_workers must be at least 1: without a worker vegeta sends nothing")
        if cell.protocol == "h2c" and not cell.keepalive:
            return Support(False, "vegeta's -h2c keeps one connection for the whole run whatever -keepalive says: "
                                  "it has no HTTP/2 in clear without keep-alive")
        if cell.rate_rps is not None and _rate(cell.rate_rps) is None:
            return Support(False, f"vegeta's -rate is whole requests per whole time unit: {cell.rate_rps:g}/s is not")
        if cell.workload is not None:
            return vegeta_workload.supports(cell) or SUPPORTED
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None and cell.stop.duration_s is not None, "supports() and the runner see to both"
        duration = cell.stop.duration_s
        argv = [found.path, "attack", "-format", "json", "-targets", TARGETS_FILE, "-output", RESULTS_FILE,
                "-duration", f"{max(1, round(duration * 1000))}ms", "-timeout", f"{option(cell, 'timeout_s', 30)}s",
                "-workers", str(cell.concurrency)]
        if cell.rate_rps is None:
            argv += ["-rate", "0", "-max-workers", str(cell.concurrency)]
        else:
            rate = _rate(cell.rate_rps)
            assert rate is not None, "supports() refuses a rate vegeta cannot say"
            argv += ["-rate", rate]
            if option(cell, "max_workers", None) is not None:
                argv += ["-max-workers", str(option(cell, "max_workers", None))]
        if not cell.keepalive:
            argv.append("-keepalive=false")
        argv += _protocol_args(cell)
        wait_s = 60.0 + 2 * duration  # a results file of a long run takes a while to convert
        steps = (Step("csv", [found.path, "encode", "--to", "csv", RESULTS_FILE], CSV_FILE, wait_s),
                 Step("report", [found.path, "report", "-type=json", RESULTS_FILE], REPORT_FILE, wait_s))
        if cell.workload is not None:
            vegeta_workload.check_build(cell)
            targets, names = vegeta_workload.files(cell)
            return Invocation(argv=argv, files={TARGETS_FILE: targets, vegeta_workload.NAMES_FILE: names},
                              outputs={"results": RESULTS_FILE, "names": vegeta_workload.NAMES_FILE}, steps=steps)
        return Invocation(argv=argv, files={TARGETS_FILE: _target(cell)}, outputs={"results": RESULTS_FILE},
                          steps=steps)

    def classify(self, path: Path, text: str) -> str:
        if path.suffix in (".bin", ".gob"):
            return "results"
        if text.startswith(vegeta_workload.NAMES_HEAD):
            return "names"
        if _REPORT_HEAD.match(text):
            return "report"
        if text.startswith('{"attack":'):
            return "jsonl"  # `vegeta encode`'s default: one result a line, as JSON
        if _ROW.match(text):
            return "csv"
        return vegeta_text.form_of_head(text) or "stdout"  # a text report is its stdout

    def recognizes(self, path: Path, text: str) -> bool:
        # Its rows also read as a JTL without a header, which JMeter claims: `toolbench parse`
        # then asks for --tool rather than read them as JMeter's. A binary results file is
        # claimed by its content only (vegeta's type definition at its start), not by its name.
        role = self.classify(path, text)
        return (role in ("report", "csv", "jsonl", "hist", "hdrplot") or vegeta_text.form_of_head(text) == "results"
                or (role == "stdout" and vegeta_text.is_text_report(text)))

    def parts(self, raw: RawOutput) -> list[str]:
        """The runs of text reports appended to one file; none when rows or a JSON report are given."""
        if {"csv", "jsonl", "report"} & set(raw.files):
            return []
        return vegeta_text.parts(raw.stdout)

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)

    def timings(self, raw: RawOutput) -> SecondTally | None:
        rows = _rows(raw, Numbers("vegeta", raw.source))
        if rows is None or not len(rows.start_ns):
            return None
        tally = SecondTally()
        tally.add((rows.start_ns - rows.start_ns.min()) // 1_000_000_000, rows.latency_ns // 1_000_000)
        return tally


def _protocol_args(cell: "Cell") -> list[str]:
    """What vegeta is told to speak: -http2 is on by default, so HTTP/1.1 over TLS turns it off."""
    args = {"http1": [], "https": ["-http2=false"], "h2": ["-http2=true"], "h2c": ["-h2c"]}[cell.protocol]
    if cell.tls and cell.ca_file:
        if "," in cell.ca_file:
            raise AdapterError(f"vegeta: -root-certs takes a comma-separated list: cannot name {cell.ca_file!r}")
        args += ["-root-certs", cell.ca_file]
    return args


def _rate(rate_rps: float) -> str | None:
    """`-rate` as vegeta takes it, whole requests per whole seconds (2.5/s is 5/2s); None
    when no fraction of small terms is the rate."""
    exact = Fraction(rate_rps).limit_denominator(1000)
    if exact <= 0 or not math.isclose(float(exact), rate_rps, rel_tol=1e-12):
        return None
    return f"{exact.numerator}/{exact.denominator}s"


def _target(cell: "Cell") -> str:
    """The one target, in vegeta's JSON format (`-format json`): every value JSON-quoted."""
    req = cell.request
    headers = {key: [value] for key, value in req.headers.items()}
    target: dict[str, Any] = {"method": req.method, "url": cell.url}
    if req.body is not None:
        target["body"] = base64.b64encode(req.body.encode()).decode("ascii")
        if "content-type" not in {k.lower() for k in headers}:
            headers["Content-Type"] = [req.content_type or "application/octet-stream"]
    if headers:
        target["header"] = headers
    return json.dumps(target) + "\n"


# ---- reading ----

def _rows(raw: RawOutput, num: Numbers) -> Rows | None:
    if "csv" in raw.files:
        return vegeta_results.read_rows(raw.files["csv"], num)
    if "jsonl" in raw.files:
        return vegeta_results.read_json_rows(raw.files["jsonl"], num)
    return None


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("vegeta", raw.source)
    rows = _rows(raw, num)
    report = vegeta_results.read_report(raw.files["report"], num) if "report" in raw.files else None
    if rows is not None and not len(rows.start_ns) and report is None:
        rows = None  # nothing decoded: no results to read
    if rows is None and report is None:
        if vegeta_text.is_text_report(raw.stdout):
            return vegeta_text.parse(raw.stdout, raw.part, num)
        raise _nothing_to_read(raw)
    if rows is not None and report is not None and len(rows.start_ns) != num.whole(report.get("requests"), "requests"):
        raise num.error("requests", f"the report counts {report.get('requests')}, the rows {len(rows.start_ns)}: "
                                    "not the same results")
    notes = [f"figures from vegeta's {' and '.join(n for n, v in (('rows', rows), ('report', report)) if v)}; "
             "it times every request, failed ones too"]
    notes += [f"{role} step failed after vegeta was killed: {why}" for role, why in raw.step_errors.items()]
    if vegeta_text.is_text_report(raw.stdout):
        notes.append("the text report beside them was not read: the same figures, rounded")
    measured = vegeta_results.from_rows(rows, num) if rows is not None else None
    reported = vegeta_results.from_report(report, num) if report is not None else None
    if measured and reported:
        m = _combined(measured, reported)
    else:
        m = measured or reported
        assert m is not None
    if rows is None:
        notes.append("percentiles are vegeta's own estimates (t-digest since vegeta 12): no per-request rows")
    by_request: list[RequestFigures] = []
    if "names" in raw.files and "csv" in raw.files:
        by_request, why = vegeta_workload.by_request(raw.files["csv"], raw.files["names"], num)
        notes += [why] if why else []
    return dataclasses.replace(m, notes=notes, by_request=by_request)


def _nothing_to_read(raw: RawOutput) -> ParseError:
    """No results: the form given, named when it is one of vegeta's that toolbench does not read,
    else what vegeta itself wrote on stderr."""
    for role in vegeta_text.FORMS:
        if role in raw.files or vegeta_text.form_of_head(raw.stdout[:CLASSIFY_CHARS]) == role:
            return vegeta_text.unreadable(role, raw.source)
    said = raw.stderr.strip().splitlines()[-1:]
    return ParseError("vegeta", "no results: neither `vegeta encode` rows nor a report (`vegeta report`, text or "
                                "JSON); " + (f"vegeta said: {said[0][:200]}" if said else "nothing on its stderr"),
                      raw.source)


def _combined(rows: Measurement, report: Measurement) -> Measurement:
    """The report's own figures, with the rows' histogram, series, stdev and error classes."""
    replace = dataclasses.replace
    latency = replace(report.latency, percentiles=Percentiles(), stdev_ms=rows.latency.stdev_ms)
    fidelity = report.fidelity | {
        "latency.stdev_ms": Fidelity.DERIVED, "histogram": Fidelity.DERIVED, "series": Fidelity.DERIVED,
        **{f"counts.failures.{k}": Fidelity.DERIVED for k in failures.CLASSES}}
    return replace(report, counts=replace(report.counts, failures=rows.counts.failures), latency=latency,
                   histogram=rows.histogram, series=rows.series, fidelity=fidelity)


ADAPTER = VegetaAdapter()
