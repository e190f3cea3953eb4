"""One run's text summary, as wrk 4.x or wrk2 prints it, read into its figures.

wrk2 (giltene/wrk2, a fork of wrk 3 with a fixed rate, `-R`) prints the same head and tail as
wrk, and with `-L` an HdrHistogram section instead of wrk's `Latency Distribution`:
`Latency Distribution (HdrHistogram - Recorded Latency)`, rows `50.000%  1.37ms` (50, 75, 90,
99, 99.9, 99.99, 99.999 and 100%), a `Detailed Percentile spectrum` table (value in ms,
percentile, cumulative count, 1/(1-percentile)) and its `#[Mean = .., StdDeviation = ..]`,
`#[Max = .., Total count = ..]` lines, all in ms. Its Recorded Latency runs from each
request's intended send time at the fixed rate (coordinated omission corrected); with `-U`
a second section, `Uncorrected Latency (measured without taking delayed starts into
account)`, runs from the actual send. Both histograms are reset when each thread's
calibration ends, so they hold fewer requests (`Total count`) than the run's total.
(src/wrk.c of giltene/wrk2: print_hdr_latency, calibrate, check_timeouts.)"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from toolbench.adapters import units
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Latency, Percentiles

# [^\S\n] is white space within a line: `\s` runs on across line ends, and from each of thousands
# of blank lines over all those after it (quadratic). No match here spans two lines.
_REQUESTS = re.compile(r"^[^\S\n]*(\d+) requests in (\S+), (\S+) read[^\S\n]*$", re.MULTILINE)
_SOCKET = re.compile(r"^[^\S\n]*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)[^\S\n]*$",
                     re.MULTILINE)
_NON2XX = re.compile(r"^[^\S\n]*Non-2xx or 3xx responses: (\d+)[^\S\n]*$", re.MULTILINE)
_CONNECTIONS = re.compile(r"^[^\S\n]*\d+ threads and (\d+) connections[^\S\n]*$", re.MULTILINE)
_RPS = re.compile(r"^Requests/sec:[^\S\n]+(\S+)[^\S\n]*$", re.MULTILINE)
_LATENCY = re.compile(r"^[^\S\n]*Latency[^\S\n]+(\S+)[^\S\n]+(\S+)[^\S\n]+(\S+)[^\S\n]+\S+[^\S\n]*$", re.MULTILINE)
_DISTRIBUTION = re.compile(r"^[^\S\n]*(50|75|90|99)%[^\S\n]+(\S+)[^\S\n]*$", re.MULTILINE)
_URL = re.compile(r"^Running \S+ test @ (\S+)[^\S\n]*$", re.MULTILINE)
_CALIBRATION = re.compile(r"^[^\S\n]*Thread calibration: ", re.MULTILINE)
_BYTES = re.compile(r"([0-9.]+)([KMGTP]?)B")
# wrk2's HdrHistogram sections, read a line at a time (each pattern is matched against one line).
_HDR_HEAD = re.compile(r"\s*Latency Distribution \(HdrHistogram - (Recorded|Uncorrected) Latency")
_HDR_ROW = re.compile(r"\s*(\d{1,3}\.\d{3})%\s+(\S+)\s*$")
_SPECTRUM_ROW = re.compile(r"\s*(\d+\.\d+)\s+(\d\.\d+)\s+(\d+)\s+\S+\s*$")
_MEAN = re.compile(r"#\[Mean\s*=\s*([^\s,]+),\s*StdDeviation\s*=\s*([^\s\]]+)\]\s*$")
_MAX = re.compile(r"#\[Max\s*=\s*([^\s,]+),\s*Total count\s*=\s*(\d+)\]\s*$")
_SECTION_END = "-" * 20
_PCT_NAMES = {"50": "p50_ms", "75": "p75_ms", "90": "p90_ms", "99": "p99_ms"}
_HDR_ROWS = {"50.000": "p50_ms", "75.000": "p75_ms", "90.000": "p90_ms", "99.000": "p99_ms", "99.900": "p999_ms"}
# Levels of the spectrum that wrk2's rows do not print; the spectrum has them exactly (its
# percentile column), to the µs.
_SPECTRUM_LEVELS = {"0.800000": "p80_ms", "0.950000": "p95_ms"}
# The step of a time printed with two decimals of its unit, in ms.
_STEP_MS = {"us": 0.00001, "ms": 0.01, "s": 10.0, "m": 600.0, "h": 36_000.0}
ERROR_KINDS = ("connect", "read", "write", "timeout")


@dataclass
class Summary:
    """One run's figures, as its text summary prints them."""

    requests: int
    duration_s: float
    errors: dict[str, int]
    status: int
    bytes: int | None = None
    rps: float | None = None
    latency: Latency = field(default_factory=Latency)
    uncorrected: Latency | None = None
    wrk2: bool = False
    recorded: int | None = None  # wrk2: the requests its latency histogram holds
    url: str | None = None
    connections: int | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class _Section:
    """One of wrk2's HdrHistogram sections, as printed."""

    rows: dict[str, str] = field(default_factory=dict)
    spectrum: dict[str, str] = field(default_factory=dict)
    first: str | None = None
    mean: tuple[str, str] | None = None
    top: tuple[str, str] | None = None


def read(text: str, num: Numbers) -> Summary | None:
    """The summary of the one run `text` holds; None when it printed none."""
    m = _REQUESTS.search(text)
    if m is None:
        return None
    s = Summary(requests=num.integer(m.group(1), "requests"),
                duration_s=units.time_ms(num, m.group(2), "requests in") / 1000.0,
                errors=dict.fromkeys(ERROR_KINDS, 0), status=0, bytes=_bytes(num, m.group(3)))
    if e := _SOCKET.search(text):
        s.errors = {kind: num.integer(v, f"socket errors, {kind}") for kind, v in zip(ERROR_KINDS, e.groups())}
    if e := _NON2XX.search(text):
        s.status = num.integer(e.group(1), "non-2xx or 3xx responses")
    if e := _RPS.search(text):
        s.rps = num.decimal(e.group(1), "Requests/sec")
    if e := _CONNECTIONS.search(text):
        s.connections = num.integer(e.group(1), "connections")
    s.url = e.group(1) if (e := _URL.search(text)) else None
    sections = _sections(text)
    s.wrk2 = bool(sections) or _CALIBRATION.search(text) is not None
    s.notes.append("bytes read from the text summary: two decimals of its unit (KB, MB, GB of 1024)")
    if s.requests == 0:
        return s  # wrk prints zeros (wrk2 -nan) for the times of no response: none is a time
    unread = ["the per-thread statistics (Req/Sec, +/- Stdev)"]
    if s.wrk2:
        unread += _wrk2_latency(s, sections, text, num)
    else:
        s.latency = _wrk_latency(text, num)
        s.notes.append("latency from wrk's text summary (rounded to two decimals of its unit)")
    s.notes.append(f"not read (no field here): {'; '.join(unread)}")
    return s


def _bytes(num: Numbers, text: str) -> int:
    m = _BYTES.fullmatch(text)
    if m is None:
        raise num.error("bytes read", f"expected a size such as 5.18MB, got {text[:40]!r}")
    return round(num.decimal(m.group(1), "bytes read") * 1024 ** " KMGTP".index(m.group(2) or " "))


def _thread_stats(text: str, num: Numbers) -> tuple[float, float, float, float] | None:
    """The Latency line of Thread Stats: avg, stdev, max in ms, and the step they are printed to."""
    m = _LATENCY.search(text)
    if m is None:
        return None
    mean, stdev, top = (units.time_ms(num, v, f"latency {what}")
                        for v, what in zip(m.groups(), ("avg", "stdev", "max")))
    return mean, stdev, top, max(_step(v) for v in m.groups())


def _wrk_latency(text: str, num: Numbers) -> Latency:
    stats = _thread_stats(text, num)
    if stats is None:
        return Latency()
    pcts = {_PCT_NAMES[p]: units.time_ms(num, v, f"{p}% latency") for p, v in _DISTRIBUTION.findall(text)}
    mean, stdev, top, step = stats
    return Latency(mean_ms=mean, stdev_ms=stdev, max_ms=top, percentiles=Percentiles(**pcts), resolution_ms=step)


def _step(text: str) -> float:
    unit = text.strip().lstrip("0123456789.+-eE")
    return _STEP_MS.get(unit, 0.01)


def _sections(text: str) -> dict[str, _Section]:
    """wrk2's HdrHistogram sections by kind (Recorded, Uncorrected), each read line by line up
    to the dashed line that closes it."""
    found: dict[str, _Section] = {}
    current: _Section | None = None
    for line in text.split("\n"):
        if head := _HDR_HEAD.match(line):
            current = found.setdefault(head.group(1), _Section())
        elif current is None:
            continue
        elif line.startswith(_SECTION_END):
            current = None
        elif row := _HDR_ROW.match(line):
            current.rows.setdefault(row.group(1), row.group(2))
        elif row := _SPECTRUM_ROW.match(line):
            current.first = current.first or row.group(1)
            current.spectrum.setdefault(row.group(2), row.group(1))
        elif row := _MEAN.match(line):
            current.mean = (row.group(1), row.group(2))
        elif row := _MAX.match(line):
            current.top = (row.group(1), row.group(2))
    return found


def _wrk2_latency(s: Summary, sections: dict[str, _Section], text: str, num: Numbers) -> list[str]:
    """Reads wrk2's latency into `s`; returns what of it has no field here."""
    recorded = sections.get("Recorded")
    stats = _thread_stats(text, num)
    if recorded is not None:
        s.latency, s.recorded = _section_latency(recorded, num, "Recorded Latency")
    if stats is not None and s.latency.mean_ms is None:  # run without -L, or a section cut short
        mean, stdev, top, step = stats
        lat = s.latency
        s.latency = Latency(min_ms=lat.min_ms, mean_ms=mean, stdev_ms=stdev,
                            max_ms=top if lat.max_ms is None else lat.max_ms, percentiles=lat.percentiles,
                            resolution_ms=max(step, lat.resolution_ms or 0.0))
    if "Uncorrected" in sections:
        s.uncorrected, _ = _section_latency(sections["Uncorrected"], num, "Uncorrected Latency")
    s.notes.append("wrk2 output: latency is its Recorded Latency, timed from each request's intended send time at "
                   "the fixed rate (coordinated omission corrected)"
                   + ("; latency_uncorrected is its Uncorrected Latency, timed from the actual send"
                      if s.uncorrected is not None else ""))
    if s.recorded is not None and s.recorded < s.requests:
        s.notes.append(f"wrk2's latency figures cover {s.recorded} of the {s.requests} requests: it resets its "
                       "histograms when each thread's calibration ends (about 10 s into the run)")
    unread = []
    if any("99.990" in sec.rows for sec in sections.values()):
        unread.append("the 99.99% and 99.999% rows")
    if any(sec.spectrum for sec in sections.values()):
        unread.append("the Detailed Percentile spectrum's other levels (its min, 80% and 95% are read)")
    return unread


def _section_latency(sec: _Section, num: Numbers, what: str) -> tuple[Latency, int | None]:
    pcts = {name: units.time_ms(num, sec.rows[key], f"{what} {key}%") for key, name in _HDR_ROWS.items()
            if key in sec.rows}
    pcts.update({name: num.decimal(sec.spectrum[key], f"{what} spectrum at {key}")
                 for key, name in _SPECTRUM_LEVELS.items() if key in sec.spectrum})
    steps = [_step(sec.rows[key]) for key in _HDR_ROWS if key in sec.rows] or [0.001]
    mean = stdev = top = None
    if sec.mean is not None:
        mean, stdev = (num.decimal(v, f"{what} {name}") for v, name in zip(sec.mean, ("Mean", "StdDeviation")))
    recorded = None
    if sec.top is not None:
        top = num.decimal(sec.top[0], f"{what} Max")
        recorded = num.integer(sec.top[1], f"{what} Total count")
    low = num.decimal(sec.first, f"{what} spectrum minimum") if sec.first is not None else None
    return Latency(min_ms=low, mean_ms=mean, max_ms=top, stdev_ms=stdev, percentiles=Percentiles(**pcts),
                   resolution_ms=max(steps)), recorded
