"""vegeta's text report (`vegeta report`, `-type=text`), in each layout it has printed, read into
the report toolbench reads from `-type=json` (adapters/vegeta_results.py); a file of several (reports
appended with `>>`: one run each; the snapshots `vegeta report -every` writes before its final
report: not runs); and the other forms of vegeta's output, which toolbench names but does not read.

The layouts: vegeta 12 prints `Requests [total, rate, throughput]`, `Duration [total, attack,
wait]`, `Latencies [min, mean, 50, 90, 95, 99, max]`, `Bytes In`, `Bytes Out` `[total, mean]`,
`Success [ratio]`, `Status Codes [code:count]` and `Error Set:` with one error text a line, each
time rounded to the next finer unit (lib/reporters.go, `round`); older ones print fewer fields
(`Requests [total, rate]`, `Latencies [mean, 50, 95, 99, max]`) at full precision. Each line is
read by the names in its brackets, so a layout is read by what it says, not by its version."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from toolbench.adapters.vegeta_results import from_report
from toolbench.errors import ParseError
from toolbench.record import numbers
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Counts, Failures, Fidelity, Latency, Measurement, Rates, Timing, Transfer

# What `vegeta report -every` writes to its stdout before each interim snapshot: clear the screen.
CLEAR = "\x1b[2J\x1b[0;0H"
_START = re.compile(r"^(?:\x1b\[2J\x1b\[0;0H)?Requests +\[total, rate", re.MULTILINE)
_GO_PART = re.compile(r"([0-9]{1,20})(?:\.([0-9]{1,20}))?(ns|us|µs|μs|ms|s|m|h)")
_GO_UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10 ** 9, "m": 60 * 10 ** 9,
               "h": 3600 * 10 ** 9}
_LATENCY_KEYS = {"min": "min", "mean": "mean", "max": "max", "50": "50th", "90": "90th", "95": "95th", "99": "99th"}
# What the text prints that toolbench derives itself from the figures it keeps.
_DERIVED = {("Requests", "throughput"), ("Bytes In", "mean"), ("Bytes Out", "mean")}
_KNOWN = {"Requests": ("total", "rate", "throughput"), "Duration": ("total", "attack", "wait"),
          "Latencies": tuple(_LATENCY_KEYS), "Bytes In": ("total", "mean"), "Bytes Out": ("total", "mean"),
          "Success": ("ratio",), "Status Codes": ("code:count",)}
# The forms of vegeta's output toolbench does not read (its role, from classify), and what it reads instead.
_INSTEAD = ("toolbench reads vegeta's per-request rows (`vegeta encode --to csv RESULTS`), its JSON report "
            "(`vegeta report -type=json RESULTS`) or its text report (`vegeta report RESULTS`)")
FORMS = {
    "results": "vegeta's binary results file (the gob `vegeta attack` writes)",
    "hist": "a vegeta histogram report (`vegeta report -type=hist[...]`): latency buckets without the counts "
            "by status",
    "hdrplot": "a vegeta HDR plot (`vegeta report -type=hdrplot`): latency percentiles without the counts by status",
}


@dataclass
class _Report:
    lines: list[str]
    snapshot: bool  # an interim snapshot of `vegeta report -every`, not a run of its own


@dataclass
class _Read:
    """One report's lines by name: (the names in its brackets, the values after them)."""

    fields: dict[str, tuple[list[str], str]] = field(default_factory=dict)
    errors: list[str] | None = None  # None: no `Error Set:` line
    stray: list[str] = field(default_factory=list)


def is_text_report(text: str) -> bool:
    return _START.search(text) is not None


def form_of_head(text: str) -> str | None:
    """The role of a form toolbench names but does not read, from a file's head."""
    if text.startswith("Bucket") and text.split("\n", 1)[0].split() == ["Bucket", "#", "%", "Histogram"]:
        return "hist"
    if text.split("\n", 1)[0].split() == ["Value(ms)", "Percentile", "TotalCount", "1/(1-Percentile)"]:
        return "hdrplot"
    head = text[:400]
    if "Result" in head[:40] and all(f"{name}\x01" in head for name in ("Attack", "Seq", "Timestamp", "Latency")):
        return "results"  # a gob stream's type definition of vegeta's Result
    return None


def unreadable(role: str, source: str | None) -> ParseError:
    return ParseError("vegeta", f"this is {FORMS[role]}, which toolbench cannot read: {_INSTEAD}", source)


def _split(text: str) -> tuple[list[_Report], int]:
    """The reports in `text` in order, and how many non-blank lines came before the first."""
    reports: list[_Report] = []
    before = 0
    for line in text.splitlines():
        snapshot = line.startswith(CLEAR)
        bare = line[len(CLEAR):] if snapshot else line
        if bare.startswith("Requests") and bare[8:].lstrip(" \t").startswith("[total"):
            reports.append(_Report([bare], snapshot))
        elif reports:
            reports[-1].lines.append(line)
        elif line.strip():
            before += 1
    return reports, before


def _runs(reports: list[_Report]) -> list[_Report]:
    """The reports that are runs: not the interim snapshots of `-every`, unless a file holds
    nothing else (a `report -every` killed before its final report)."""
    final = [r for r in reports if not r.snapshot]
    return final or reports[-1:]


def parts(text: str) -> list[str]:
    """run1, run2... when the text holds the reports of several runs (appended with `>>`)."""
    runs = _runs(_split(text)[0])
    return [f"run{n}" for n in range(1, len(runs) + 1)] if len(runs) > 1 else []


def parse(text: str, part: str | None, num: Numbers) -> Measurement:
    """The text report of one run (`part` run<N> of several), or of all merged (`part` "all")."""
    reports, before = _split(text)
    runs = _runs(reports)
    if not runs:
        raise num.error("the text report", "no `Requests [total, ...]` line")
    notes = []
    if before:
        notes.append(f"{before} lines before the first report are not vegeta's and were not read")
    snapshots = len(reports) - len(runs)
    if any(r.snapshot for r in runs):
        notes.append("no final report after the snapshots of `vegeta report -every` (cut short?): the last "
                     "snapshot is read")
    elif snapshots:
        notes.append(f"{snapshots} interim snapshots of `vegeta report -every` before the final report are not "
                     "results of their own")
    if part == "all":
        m = _merged([_measurement(r, num) for r in runs])
    elif part is not None:
        index = int(part[3:]) - 1 if part.startswith("run") and part[3:].isdigit() else -1
        if not 0 <= index < len(runs):
            raise num.error("the text report", f"the file holds {len(runs)} reports, not {part}")
        m = _measurement(runs[index], num)
    elif len(runs) > 1:
        raise num.error("the text report", f"the file holds {len(runs)} reports, of {len(runs)} runs: "
                                           "`toolbench parse` reads each as a result of its own")
    else:
        m = _measurement(runs[0], num)
    return dataclasses.replace(m, notes=m.notes + notes)


def _fields(report: _Report, num: Numbers) -> _Read:
    read = _Read()
    lines = iter(report.lines)
    for line in lines:
        if line.strip() == "Error Set:":
            read.errors = [text.strip() for text in lines if text.strip()]
            break
        head, bracket, rest = line.partition("[")
        keys, closed, values = rest.partition("]")
        if not (bracket and closed):
            if line.strip():
                read.stray.append(line.strip()[:60])
            continue
        name = " ".join(head.split())
        if name in read.fields:
            raise num.error(name, "twice in one report")
        read.fields[name] = ([key.strip() for key in keys.split(",")], values)
    return read


def _values(read: _Read, name: str, num: Numbers) -> dict[str, str]:
    """A line's values by the names in its brackets; {} when the report has no such line."""
    if name not in read.fields:
        return {}
    keys, values = read.fields[name]
    said = [v.strip() for v in values.split(",")]
    if len(said) != len(keys):
        raise num.error(name, f"{len(keys)} names in brackets, {len(said)} values")
    return dict(zip(keys, said))


def go_duration_ns(text: str, num: Numbers, what: str) -> int:
    """A time as Go prints a time.Duration (`1m59.995999932s`, `355.297µs`, `0s`), in nanoseconds."""
    total, at = 0, 0
    while at < len(text):
        m = _GO_PART.match(text, at)
        if m is None:
            raise num.error(what, f"expected a Go duration, got {text[:40]!r}")
        whole, fraction, unit = m.groups()
        scale = _GO_UNIT_NS[unit]
        total += int(whole) * scale + (int(fraction) * scale // 10 ** len(fraction) if fraction else 0)
        at = m.end()
    if not text:
        raise num.error(what, "expected a Go duration, got nothing")
    if why := numbers.problem(total):
        raise num.error(what, why)
    return total


def _step_ms(text: str, ns: int) -> float:
    """The step a printed time is exact to: its last digit's, or, finer, the step vegeta 12
    rounds to (the next finer unit than the time's largest); `1s` may be 1.000 s to the ms."""
    unit = _GO_PART.findall(text)[-1]  # text is a Go duration already read: it has a last part
    printed_ms = _GO_UNIT_NS[unit[2]] / 1e6 / 10 ** len(unit[1])
    for unit_ns, step_ms in ((3600 * 10 ** 9, 60_000.0), (60 * 10 ** 9, 1000.0), (10 ** 9, 1.0), (10 ** 6, 1e-3)):
        if ns >= unit_ns:
            return min(printed_ms, step_ms)
    return min(printed_ms, 1e-6)


def _report_data(read: _Read, num: Numbers) -> tuple[dict[str, Any], float]:
    """The text as `vegeta report -type=json` says it, and the coarsest rounding of its times (ms)."""
    requests, duration = _values(read, "Requests", num), _values(read, "Duration", num)
    if "total" not in requests:
        raise num.error("the text report", "no total in its Requests line")
    if "Status Codes" not in read.fields:
        raise num.error("the text report", "no Status Codes line: its failures cannot be counted")
    data: dict[str, Any] = {"requests": num.integer(requests["total"], "Requests total"),
                            "errors": read.errors or [], "status_codes": _codes(read, num)}
    if "rate" in requests:
        data["rate"] = num.decimal(requests["rate"], "Requests rate")
    printed = {f"Duration {key}": value for key, value in duration.items() if key in _KNOWN["Duration"]}
    printed |= {f"Latencies {key}": value for key, value in _values(read, "Latencies", num).items()
                if key in _LATENCY_KEYS}
    ns = {what: go_duration_ns(value, num, what) for what, value in printed.items()}
    times = {what.split()[1]: value for what, value in ns.items() if what.startswith("Duration")}
    if "attack" in times and "wait" in times:
        data["duration"], data["wait"] = times["attack"], times["wait"]
    elif "total" in times:
        data["duration"], data["wait"] = times["total"], 0
    data["latencies"] = {_LATENCY_KEYS[what.split()[1]]: value for what, value in ns.items()
                         if what.startswith("Latencies")}
    for name, key in (("Bytes In", "bytes_in"), ("Bytes Out", "bytes_out")):
        said = _values(read, name, num)
        if "total" in said:
            data[key] = {"total": num.integer(said["total"], f"{name} total")}
    return data, max((_step_ms(printed[what], value) for what, value in ns.items()), default=1e-6)


def _codes(read: _Read, num: Numbers) -> dict[str, int]:
    codes: dict[str, int] = {}
    for pair in read.fields["Status Codes"][1].split():
        code, colon, count = pair.partition(":")
        if not colon or code in codes:
            raise num.error("Status Codes", f"expected code:count once for each code, got {pair[:40]!r}")
        codes[code] = num.integer(count, f"Status Codes {code[:10]}")
    return codes


def _measurement(report: _Report, num: Numbers) -> Measurement:
    read = _fields(report, num)
    data, step_ms = _report_data(read, num)
    m = from_report(data, num)
    ratio = _values(read, "Success", num).get("ratio")
    total, ok = m.counts.requests_total or 0, m.counts.requests_ok or 0
    if ratio is not None and total:
        said = num.decimal(ratio.removesuffix("%"), "Success ratio")
        if abs(said - 100.0 * ok / total) > 0.005 + 1e-9:
            raise num.error("Success ratio", f"{ratio} is not its status codes' {ok} of {total}")
    latency = dataclasses.replace(m.latency, resolution_ms=step_ms) if total else m.latency
    return dataclasses.replace(m, latency=latency, notes=_notes(read, step_ms))


def _notes(read: _Read, step_ms: float) -> list[str]:
    notes = [f"figures from vegeta's text report, its times as printed (to {step_ms:g} ms or finer); "
             "percentiles are vegeta's own estimates; it times every request, failed ones too"]
    kept = [f"{name} {key}" for name, (keys, _) in read.fields.items() for key in keys if (name, key) in _DERIVED]
    if kept:
        notes.append(f"not kept from the text report: {', '.join(kept)} (toolbench derives them from the rest)")
    unknown = [f"{name} [{key}]" for name, (keys, _) in read.fields.items() for key in keys
               if key not in _KNOWN.get(name, ())]
    unknown += [f"line {text!r}" for text in read.stray]
    if unknown:
        notes.append(f"not read (toolbench does not know them): {', '.join(unknown)}")
    if read.errors is None:
        notes.append("no `Error Set:` line: the failures' texts are unknown")
    return notes


def _merged(parts: list[Measurement]) -> Measurement:
    """Reports of runs one after the other, as one: counts, bytes and durations summed, the
    extremes over all, the mean weighted by requests (vegeta times failed ones too)."""
    def total(values: list[Any]) -> Any:
        return None if any(v is None for v in values) else sum(values)

    counts = [p.counts for p in parts]
    codes: dict[int, int] = {}
    for c in counts:
        for code, n in c.status_codes.items():
            codes[code] = codes.get(code, 0) + n
    failures = Failures(**{f.name: total([getattr(c.failures, f.name) for c in counts])
                           for f in dataclasses.fields(Failures)})
    timed = [p for p in parts if p.latency.mean_ms is not None]
    weights = sum(p.counts.requests_total or 0 for p in timed)
    latency = Latency(
        min_ms=min((p.latency.min_ms for p in timed if p.latency.min_ms is not None), default=None),
        max_ms=max((p.latency.max_ms for p in timed if p.latency.max_ms is not None), default=None),
        mean_ms=sum(p.latency.mean_ms * (p.counts.requests_total or 0) for p in timed) / weights  # type: ignore
        if weights else None,
        resolution_ms=max((p.latency.resolution_ms or 0.0 for p in timed), default=None))
    return Measurement(
        tool="vegeta",
        timing=Timing(duration_s=total([p.timing.duration_s for p in timed]) if timed else None),
        counts=Counts(requests_total=total([c.requests_total for c in counts]),
                      requests_ok=total([c.requests_ok for c in counts]),
                      requests_failed=total([c.requests_failed for c in counts]), status_codes=codes,
                      failures=failures),
        rates=Rates(),
        transfer=Transfer(received_bytes=total([p.transfer.received_bytes for p in parts]),
                          sent_bytes=total([p.transfer.sent_bytes for p in parts])),
        latency=latency,
        coordinated_omission=parts[0].coordinated_omission,
        fidelity={**parts[0].fidelity, "latency.mean_ms": Fidelity.DERIVED},
        notes=[f"{len(parts)} reports, of runs one after another, merged (--merge-runs): counts, bytes and "
               "durations summed, the mean weighted by requests; percentiles cannot be merged from reports",
               *parts[0].notes[:1]],
    )
