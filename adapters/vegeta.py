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
  `toolbench install` puts it in .tools/go/vegeta-<version>/, and the folder's name says it."""
from __future__ import annotations

import base64
import contextlib
import csv
import dataclasses
import json
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, RawOutput, Step, Support,
                                        found_go_tool, option)
from toolbench.contract.recipe import TESTS, GoModule, Install
from toolbench.errors import ParseError
from toolbench.record import failures, histogram, numbers
from toolbench.record.numbers import Numbers
from toolbench.record.schema import (Counts, Failures, Fidelity, Latency, Measurement, Omission, Percentiles, Rates,
                                     Timing, Transfer)
from toolbench.record.timings import SecondTally

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

TARGETS_FILE = "targets.json"
RESULTS_FILE = "results.bin"
CSV_FILE = "results.csv"
REPORT_FILE = "report.json"
RESOLUTION_MS = 1e-6  # nanoseconds
_VERSION = re.compile(r"^Version: *v?(\S*)", re.MULTILINE)
_ROW = re.compile(r"\d{1,19},\d{1,5},\d{1,20},\d{1,20},\d{1,20},")
_TIMESTAMP = re.compile(r"[0-9]{1,19}")
_GO_URL_ERROR = re.compile(r'^[A-Z]+ "(?:[^"\\]|\\.)*": ')  # `Get "http://...": ` before Go's own words
_REPORT_PCTS = {"50th": "p50_ms", "90th": "p90_ms", "95th": "p95_ms", "99th": "p99_ms"}
_FIELD_LIMIT = 1 << 30  # a response body, base64, in one CSV field
# Go's error texts to failure classes (toolbench.record.failures), first match wins.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("timeout", "deadline exceeded")),
    ("connect", ("connection refused", "connect:", "no route to host", "dial tcp")),
    ("reset", ("connection reset",)),
    ("read", ("eof", "broken pipe", "malformed http")),
)


class VegetaAdapter(Adapter):
    name = "vegeta"
    install = Install((GoModule("github.com/tsenart/vegeta/v12", "12.13.0", "vegeta"),), TESTS)
    # max_workers: a bound on the workers of a rate cell (default none); timeout_s: per request.
    option_types = {"timeout_s": int, "max_workers": int}

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return found_go_tool(host, path, "vegeta", ["-version"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.stop.duration_s is None:
            return Support(False, "vegeta stops on a duration only (-duration): it has no request count")
        if option(cell, "max_workers", 1) < 1:
            return Support(False, "tools.vegeta.max_workers must be at least 1: without a worker vegeta sends nothing")
        if cell.rate_rps is not None and _rate(cell.rate_rps) is None:
            return Support(False, f"vegeta's -rate is whole requests per whole time unit: {cell.rate_rps:g}/s is not")
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
        wait_s = 60.0 + 2 * duration  # a results file of a long run takes a while to convert
        steps = (Step("csv", [found.path, "encode", "--to", "csv", RESULTS_FILE], CSV_FILE, wait_s),
                 Step("report", [found.path, "report", "-type=json", RESULTS_FILE], REPORT_FILE, wait_s))
        return Invocation(argv=argv, files={TARGETS_FILE: _target(cell)}, outputs={"results": RESULTS_FILE},
                          steps=steps)

    def classify(self, path: Path, text: str) -> str:
        if path.suffix in (".bin", ".gob"):
            return "results"
        if text.startswith('{"latencies":'):
            return "report"
        return "csv" if _ROW.match(text) else "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        # Its rows also read as a JTL without a header, which JMeter claims: `toolbench parse`
        # then asks for --tool rather than read them as JMeter's.
        return self.classify(path, text) in ("report", "csv")

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)

    def timings(self, raw: RawOutput) -> SecondTally | None:
        num = Numbers("vegeta", raw.source)
        rows = _read_rows(raw.files["csv"], num) if "csv" in raw.files else None
        if rows is None or not len(rows.start_ns):
            return None
        tally = SecondTally()
        tally.add((rows.start_ns - rows.start_ns.min()) // 1_000_000_000, rows.latency_ns // 1_000_000)
        return tally


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

@dataclass(frozen=True)
class _Rows:
    """`vegeta encode --to csv`: one row per request, in no particular order."""

    start_ns: np.ndarray  # since the epoch
    latency_ns: np.ndarray
    codes: np.ndarray
    failed: np.ndarray
    bytes_in: int
    bytes_out: int
    errors: dict[str, int]  # the texts of the failures that are not an HTTP status, with their counts


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("vegeta", raw.source)
    rows = _read_rows(raw.files["csv"], num) if "csv" in raw.files else None
    report = _read_report(raw.files["report"], num) if "report" in raw.files else None
    if rows is not None and not len(rows.start_ns) and report is None:
        rows = None  # nothing decoded: no results to read
    if rows is None and report is None:
        said = (raw.stderr.strip() or raw.stdout.strip()).splitlines()[-1:] or ["nothing"]
        raise ParseError("vegeta", "no results: neither `vegeta encode` rows nor a `vegeta report -type=json`; "
                                   f"vegeta said: {said[0][:200]}", raw.source)
    if rows is not None and report is not None and len(rows.start_ns) != num.whole(report.get("requests"), "requests"):
        raise num.error("requests", f"the report counts {report.get('requests')}, the rows {len(rows.start_ns)}: "
                                    "not the same results")
    notes = [f"figures from vegeta's {' and '.join(n for n, v in (('rows', rows), ('report', report)) if v)}; "
             "it times every request, failed ones too"]
    notes += [f"{role} step failed after vegeta was killed: {why}" for role, why in raw.step_errors.items()]
    measured = _from_rows(rows, num) if rows is not None else None
    reported = _from_report(report, num) if report is not None else None
    if measured and reported:
        m = _combined(measured, reported)
    else:
        m = measured or reported
        assert m is not None
    notes += [] if rows is not None else ["percentiles are vegeta's t-digest estimates: no per-request rows"]
    return dataclasses.replace(m, notes=notes)


def _combined(rows: Measurement, report: Measurement) -> Measurement:
    """The report's own figures, with the rows' histogram, series, stdev and error classes."""
    replace = dataclasses.replace
    latency = replace(report.latency, percentiles=Percentiles(), stdev_ms=rows.latency.stdev_ms)
    fidelity = report.fidelity | {
        "latency.stdev_ms": Fidelity.DERIVED, "histogram": Fidelity.DERIVED, "series": Fidelity.DERIVED,
        **{f"counts.failures.{k}": Fidelity.DERIVED for k in failures.CLASSES}}
    return replace(report, counts=replace(report.counts, failures=rows.counts.failures), latency=latency,
                   histogram=rows.histogram, series=rows.series, fidelity=fidelity)


@contextlib.contextmanager
def _wide_fields() -> Iterator[None]:
    """csv's field limit (128 KiB by default) raised for a read: a row holds the response body."""
    was = csv.field_size_limit(_FIELD_LIMIT)
    try:
        yield
    finally:
        csv.field_size_limit(was)


def _read_rows(path: Path, num: Numbers) -> _Rows:
    starts: list[int] = []
    values: list[tuple[int, int, int, int]] = []  # latency, code, bytes in, bytes out
    failed: list[bool] = []
    errors: dict[str, int] = {}
    try:
        with _wide_fields(), open(path, newline="", errors="replace") as fh:
            for i, row in enumerate(csv.reader(fh), 1):
                if len(row) != 12:
                    raise num.error(f"CSV row {i}", f"expected vegeta's 12 fields, got {len(row)}")
                if not _TIMESTAMP.fullmatch(row[0]) or int(row[0]) >= 1 << 63:
                    raise num.error(f"row {i} timestamp", f"expected nanoseconds since the epoch, got {row[0][:40]!r}")
                code, took = num.integer(row[1], f"row {i} code"), num.integer(row[2], f"row {i} latency")
                if code and not 100 <= code <= 999:
                    raise num.error(f"row {i} code", f"{code} is not an HTTP status")
                starts.append(int(row[0]))
                values.append((took, code, num.integer(row[4], f"row {i} bytes in"),
                               num.integer(row[3], f"row {i} bytes out")))
                bad = bool(row[5]) or not 200 <= code < 400
                failed.append(bad)
                if bad and not 400 <= code <= 999:
                    text = _GO_URL_ERROR.sub("", row[5]) or f"status {code}"
                    errors[text] = errors.get(text, 0) + 1
    except csv.Error as exc:  # a NUL byte, a field over even the raised limit: no row of vegeta's
        raise num.error("CSV", str(exc)) from None
    table = np.array(values, np.int64).reshape(-1, 4)
    sizes = [int(table[:, col].sum()) for col in (2, 3)]
    for what, total in zip(("bytes in", "bytes out"), sizes):
        if why := numbers.problem(total):
            raise num.error(what, why)
    return _Rows(np.array(starts, np.int64), table[:, 0], table[:, 1], np.array(failed, bool), sizes[0],
                 sizes[1], errors)


def _from_rows(rows: _Rows, num: Numbers) -> Measurement:
    n = len(rows.start_ns)
    codes = {int(c): int(k) for c, k in zip(*np.unique(rows.codes, return_counts=True)) if c}
    by_class = failures.tally(rows.errors, FAILURE_TABLE)
    http_4xx = int(((rows.codes >= 400) & (rows.codes < 500)).sum())
    http_5xx = int((rows.codes >= 500).sum())
    failed = int(rows.failed.sum())
    first = int(rows.start_ns.min()) if n else 0
    offsets = rows.start_ns - first
    micros = (rows.latency_ns + 500) // 1000
    per = histogram.PerRequest("vegeta", num.source, unit_ms=0.001, seconds_field="timestamp")
    per.add(offsets // 1_000_000_000, micros, rows.failed)
    hist = histogram.new()
    for value, count in zip(*np.unique(micros, return_counts=True)):
        histogram.record_ms(hist, int(value) / 1000.0, int(count))
    per.add_histogram(hist)
    lat_ms = rows.latency_ns / 1e6
    send_span_s = int(offsets.max()) / 1e9 if n else 0.0
    latency = Latency(min_ms=float(lat_ms.min()), mean_ms=float(lat_ms.mean()), max_ms=float(lat_ms.max()),
                      stdev_ms=float(lat_ms.std()), resolution_ms=RESOLUTION_MS) if n else Latency()
    derived = ["timing.duration_s", "rates.rps", "counts.requests_total", "counts.requests_ok",
               "counts.requests_failed", "counts.status_codes", "transfer.received_bytes", "transfer.sent_bytes",
               "latency.min_ms", "latency.mean_ms", "latency.max_ms", "latency.stdev_ms", "histogram", "series",
               *(f"counts.failures.{k}" for k in failures.CLASSES)]
    return Measurement(
        tool="vegeta",
        timing=Timing(duration_s=int((offsets + rows.latency_ns).max()) / 1e9 if n else None),
        counts=Counts(requests_total=n, requests_ok=n - failed, requests_failed=failed, status_codes=codes,
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        read=by_class["read"], reset=by_class["reset"], other=by_class["other"],
                                        http_4xx=http_4xx, http_5xx=http_5xx)),
        rates=Rates(rps=n / send_span_s if send_span_s else None),  # as vegeta's report says its rate
        transfer=Transfer(received_bytes=rows.bytes_in, sent_bytes=rows.bytes_out),
        latency=latency,
        histogram=per.encoded(),
        series=per.series(first=0) if n else [],
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity={name: Fidelity.DERIVED for name in derived},
    )


def _read_report(path: Path, num: Numbers) -> dict[str, Any] | None:
    text = path.read_text(errors="replace")
    if not text.strip():
        return None  # the step wrote nothing (it failed, said in step_errors)
    data = num.loads(text, "the JSON report")
    if not isinstance(data, dict) or not isinstance(data.get("latencies"), dict):
        raise num.error("the JSON report", "no latencies: not vegeta's report")
    return data


def _section(data: dict[str, Any], key: str, num: Numbers) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise num.error(key, "expected an object")
    return value


def _from_report(data: dict[str, Any], num: Numbers) -> Measurement:
    total = num.whole(data.get("requests"), "requests")
    codes_in = _section(data, "status_codes", num)
    codes: dict[int, int] = {}
    for key, value in codes_in.items():
        code = num.integer(key, "status_codes")
        if code and not 100 <= code <= 999:
            raise num.error("status_codes", f"{key!r} is not an HTTP status")
        codes[code] = num.whole(value, f"status_codes.{key}")
    ok = sum(n for c, n in codes.items() if 200 <= c < 400)
    http_4xx = sum(n for c, n in codes.items() if 400 <= c < 500)
    http_5xx = sum(n for c, n in codes.items() if c >= 500)
    errors = data.get("errors")
    if not isinstance(errors, list) or not all(isinstance(e, str) for e in errors):
        raise num.error("errors", "expected a list of texts")
    # The report lists each error text once, uncounted: the failures without an HTTP status go
    # to a class only when every such text says the same one.
    classes = {failures.classify(_GO_URL_ERROR.sub("", e), FAILURE_TABLE) for e in errors
               if not re.match(r"\d{3} ", e)}
    unanswered = total - ok - http_4xx - http_5xx
    by_class = dict.fromkeys(failures.CLASSES, 0)
    by_class[classes.pop() if len(classes) == 1 else "other"] += unanswered
    lat = _section(data, "latencies", num)
    latency = Latency()
    if total:
        ms = {key: num.whole(lat.get(key), f"latencies.{key}") / 1e6 for key in ("min", "mean", "max", *_REPORT_PCTS)}
        latency = Latency(min_ms=ms["min"], mean_ms=ms["mean"], max_ms=ms["max"], resolution_ms=RESOLUTION_MS,
                          percentiles=Percentiles(**{name: ms[key] for key, name in _REPORT_PCTS.items()}))
    duration = num.whole(data.get("duration"), "duration") + num.whole(data.get("wait"), "wait")
    return Measurement(
        tool="vegeta",
        timing=Timing(duration_s=duration / 1e9 if total else None),
        counts=Counts(requests_total=total, requests_ok=ok, requests_failed=total - ok,
                      status_codes={c: n for c, n in codes.items() if c},
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        read=by_class["read"], reset=by_class["reset"], other=by_class["other"],
                                        http_4xx=http_4xx, http_5xx=http_5xx)),
        rates=Rates(rps=num.real(data.get("rate"), "rate") if total else None),
        transfer=Transfer(received_bytes=num.whole(_section(data, "bytes_in", num).get("total"), "bytes_in.total"),
                          sent_bytes=num.whole(_section(data, "bytes_out", num).get("total"), "bytes_out.total")),
        latency=latency,
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity={"counts.requests_ok": Fidelity.DERIVED, "counts.requests_failed": Fidelity.DERIVED,
                  "timing.duration_s": Fidelity.DERIVED,
                  **{f"counts.failures.{k}": Fidelity.DERIVED for k in failures.CLASSES}},
    )


ADAPTER = VegetaAdapter()
