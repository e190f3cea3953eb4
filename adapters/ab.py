"""ApacheBench (ab): builds its command, reads its stdout, -e CSV and -g TSV."""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from toolbench import histogram
from toolbench.adapter import SUPPORTED, Invocation, RawOutput, Support, option, version_from_output
from toolbench.errors import ParseError
from toolbench.schema import (PERCENTILES, Counts, Failures, Fidelity, Latency, Measurement, Percentiles,
                              Rates, SecondSample, Timing, Transfer)

if TYPE_CHECKING:
    from toolbench.hosts import Host
    from toolbench.plan import Cell

# ab allocates its per-request table up front and caps `-t` alone at 50,000
# requests; with -n it runs until either limit. This bounds the table for a run
# far faster than ab can go (about 70k requests/s on a loopback nginx).
MAX_RPS_FOR_TABLE = 200_000
AB_T_ALONE_CAP = 50_000

_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9 \-]*?):\s+(.*)$")
_CONN_ROW = re.compile(r"^(Connect|Processing|Waiting|Total):\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s*$")
_PCT_ROW = re.compile(r"^\s*(\d+)%\s+(\d+)")
_FAILED_BREAKDOWN = re.compile(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)")
_VERSION = re.compile(r"This is ApacheBench, Version (\S+)")
# ab prints whole percents only: every schema percentile but p99.9.
_PCT_NAMES = {int(pct): name for name, pct in PERCENTILES if pct.is_integer()}


class AbAdapter:
    name = "ab"
    option_types = {"gnuplot": bool, "timeout_s": int}

    def detect(self, host: "Host") -> str | None:
        return version_from_output(host, ["ab", "-V"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.rate_rps is not None:
            return Support(False, "ab has no fixed-rate (open model) mode")
        if cell.request.body is not None and cell.request.method not in ("POST", "PUT"):
            return Support(False, f"ab sends a body only with POST or PUT, not {cell.request.method}")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path) -> Invocation:
        assert cell.url is not None, "the runner resolves the URL before building"
        argv = ["ab", "-c", str(cell.concurrency), "-r", "-e", "percentiles.csv",
                "-s", str(option(cell, "timeout_s", 30))]
        outputs = {"csv": "percentiles.csv"}
        files: dict[str, str] = {}
        if option(cell, "gnuplot", True):
            argv += ["-g", "requests.tsv"]
            outputs["tsv"] = "requests.tsv"
        if cell.keepalive:
            argv.append("-k")
        total = cell.stop.total_requests(cell.concurrency)  # per connection: ab's -n is c x N
        if total is not None:
            argv += ["-n", str(total)]
        else:
            assert cell.stop.duration_s is not None
            cap = max(AB_T_ALONE_CAP, int(cell.stop.duration_s * MAX_RPS_FOR_TABLE))
            argv += ["-t", f"{cell.stop.duration_s:g}", "-n", str(cap)]
        argv += _request_args(cell, files)
        argv.append(cell.url)
        return Invocation(argv=argv, files=files, outputs=outputs)

    def classify(self, path: Path, text: str) -> str:
        if text.startswith("Percentage served,"):
            return "csv"
        if text.startswith("starttime\tseconds\t"):
            return "tsv"
        return "stdout"

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def _request_args(cell: "Cell", files: dict[str, str]) -> list[str]:
    req = cell.request
    args: list[str] = []
    for key, value in req.headers.items():
        args += ["-H", f"{key}: {value}"]
    if req.body is not None:
        files["body"] = req.body
        args += ["-p" if req.method == "POST" else "-u", "body"]
        args += ["-T", req.content_type or "application/octet-stream"]
    elif req.method != "GET":
        args += ["-m", req.method]
    return args


def parse(raw: RawOutput) -> Measurement:
    fields, conn, pcts = _scan_stdout(raw.stdout)
    version = _VERSION.search(raw.stdout)
    if version is None and not raw.files:
        raise ParseError("ab", "no ApacheBench banner in the output", raw.source)
    notes: list[str] = []
    fidelity: dict[str, Fidelity] = {}
    counts = _counts(fields, notes, fidelity)
    latency = _latency(fields, conn, pcts, raw, fidelity)
    hist, series = _per_request(raw)
    if hist is not None:
        fidelity["histogram"] = Fidelity.DERIVED
        fidelity["series"] = Fidelity.DERIVED
        notes.append("histogram and series come from ab -g, whose times are whole milliseconds")
    complete = fields.get("Complete requests")
    if complete is not None and int(complete) == AB_T_ALONE_CAP:
        notes.append("ab stopped at 50,000 requests, its cap for -t without -n: the run may be shorter than asked")
    error = _error_line(raw.stderr)
    if error:
        notes.append(f"ab: {error}")
    return Measurement(
        tool="ab",
        timing=Timing(duration_s=_number(fields.get("Time taken for tests"))),
        counts=counts,
        rates=Rates(rps=_number(fields.get("Requests per second"))),
        transfer=Transfer(
            received_bytes=_int(fields.get("Total transferred")),
            sent_bytes=_int(fields.get("Total body sent")),
            received_bytes_per_s=_kbytes_per_s(fields.get("Transfer rate")),
        ),
        latency=latency,
        histogram=histogram.encode(hist) if hist is not None else None,
        histogram_resolution_ms=1.0 if hist is not None else None,  # -g times are whole ms
        series=series,
        fidelity=fidelity,
        notes=notes,
        url=_url(fields),
        concurrency=_int(fields.get("Concurrency Level")),
        tool_version=version.group(1) if version else None,
    )


def _scan_stdout(text: str) -> tuple[dict[str, str], dict[str, list[float]], dict[int, float]]:
    fields: dict[str, str] = {}
    conn: dict[str, list[float]] = {}
    pcts: dict[int, float] = {}
    for line in text.splitlines():
        if m := _CONN_ROW.match(line):
            conn[m.group(1)] = [float(v) for v in m.groups()[1:]]
        elif m := _PCT_ROW.match(line):
            pcts[int(m.group(1))] = float(m.group(2))
        elif m := _FAILED_BREAKDOWN.search(line):
            fields["breakdown"] = line
        elif m := _FIELD.match(line):
            # "Time per request" appears twice; the first is per request, the second per concurrency slot.
            fields.setdefault(m.group(1).strip(), m.group(2).strip())
    return fields, conn, pcts


def _counts(fields: dict[str, str], notes: list[str], fidelity: dict[str, Fidelity]) -> Counts:
    complete = _int(fields.get("Complete requests"))
    if complete is None:
        return Counts()
    connect = receive = length = exceptions = 0
    if (m := _FAILED_BREAKDOWN.search(fields.get("breakdown", ""))) is not None:
        connect, receive, length, exceptions = (int(v) for v in m.groups())
    non2xx = _int(fields.get("Non-2xx responses")) or 0
    if length:
        # ab compares every body's length with the first one's: a dynamic page "fails".
        notes.append(f"ab counted {length} responses as failed because their length differed from the "
                     "first response's; toolbench does not count those as failures")
    failed = receive + exceptions + non2xx + connect
    for name in ("counts.requests_ok", "counts.requests_failed"):
        fidelity[name] = Fidelity.DERIVED
    return Counts(
        requests_total=complete,
        requests_ok=max(0, complete - receive - exceptions - non2xx),
        requests_failed=failed,
        # ab tells 2xx from the rest only: a 3xx, 4xx or 5xx all count as Non-2xx.
        failures=Failures(connect=connect, read=receive, other=exceptions, http=non2xx),
    )


def _latency(fields: dict[str, str], conn: dict[str, list[float]], pcts: dict[int, float],
             raw: RawOutput, fidelity: dict[str, Fidelity]) -> Latency:
    csv_pcts = _read_csv(raw.files.get("csv"))
    if csv_pcts:
        percentiles = Percentiles(**{name: csv_pcts[p] for p, name in _PCT_NAMES.items() if p in csv_pcts})
        resolution = 0.001
    else:
        percentiles = Percentiles(**{name: pcts[p] for p, name in _PCT_NAMES.items() if p in pcts})
        resolution = 1.0
    total = conn.get("Total")
    max_ms = csv_pcts.get(100) if csv_pcts else (pcts.get(100) if pcts else None)
    return Latency(
        min_ms=total[0] if total else None,
        # ab's mean "Time per request" has three decimals; the table's is whole ms.
        mean_ms=_number(fields.get("Time per request")),
        max_ms=max_ms if max_ms is not None else (total[4] if total else None),
        stdev_ms=total[2] if total else None,
        percentiles=percentiles,
        connect_mean_ms=conn["Connect"][1] if "Connect" in conn else None,
        ttfb_mean_ms=conn["Waiting"][1] if "Waiting" in conn else None,
        resolution_ms=resolution if (total or csv_pcts) else None,
    )


def _read_csv(path: Path | None) -> dict[int, float]:
    if path is None:
        return {}
    result = {}
    lines = path.read_text(errors="replace").splitlines()
    if not lines or not lines[0].startswith("Percentage served"):
        raise ParseError("ab", "the -e file has no 'Percentage served' header", str(path))
    for number, line in enumerate(lines[1:], 2):
        try:
            pct, ms = line.split(",")
            result[int(pct)] = float(ms)
        except ValueError:
            raise ParseError("ab", f"line {number}: expected 'percent,ms', got {line!r}", str(path)) from None
    return result


def _per_request(raw: RawOutput) -> tuple[object | None, list[SecondSample]]:
    path = raw.files.get("tsv")
    if path is None:
        return None, []
    hist = histogram.new()
    per_second: dict[int, list[int]] = {}
    with open(path, errors="replace") as fh:
        header = fh.readline()
        if not header.startswith("starttime\tseconds"):
            raise ParseError("ab", "the -g file has no 'starttime seconds' header", str(path))
        for number, line in enumerate(fh, 2):
            parts = line.rstrip("\n").split("\t")
            try:
                second, ttime = int(parts[1]), int(parts[4])
            except (IndexError, ValueError):
                raise ParseError("ab", f"line {number}: not a -g row: {line.strip()!r}", str(path)) from None
            histogram.record_ms(hist, ttime)
            bucket = per_second.setdefault(second, [0, 0, 0])
            bucket[0] += 1
            bucket[1] += ttime
            bucket[2] = max(bucket[2], ttime)
    if not per_second:
        return None, []
    first = min(per_second)
    series = [SecondSample(second=s - first, requests=n, latency_mean_ms=total / n, latency_max_ms=float(top))
              for s, (n, total, top) in sorted(per_second.items())]
    return hist, series


def _error_line(stderr: str) -> str | None:
    for line in reversed(stderr.strip().splitlines()):
        line = line.strip()
        if line and not line.startswith(("Completed", "Finished")):
            return line
    return None


def _url(fields: dict[str, str]) -> str | None:
    host, port, path = fields.get("Server Hostname"), fields.get("Server Port"), fields.get("Document Path")
    if host is None or path is None:
        return None
    return f"http://{host}:{port or 80}{path}"


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    m = re.match(r"[-\d.]+", text)
    return float(m.group(0)) if m else None


def _int(text: str | None) -> int | None:
    value = _number(text)
    return int(value) if value is not None else None


def _kbytes_per_s(text: str | None) -> float | None:
    value = _number(text)
    return value * 1024 if value is not None else None


ADAPTER = AbAdapter()
