"""JMeter's console summariser: its running-total line (`summary = ...`), on stdout or in
jmeter.log, read when a run left no JTL; then its figures are all a Measurement has."""
from __future__ import annotations

import re

from toolbench.record.numbers import Numbers
from toolbench.record.schema import Counts, Fidelity, Latency, Measurement, Omission, Rates, Timing

# The summariser's line, on stdout or in jmeter.log (after `<date> INFO o.a.j.r.Summariser: `, 2.x:
# `INFO  - jmeter.reporters.Summariser: `), under its name: `summary`, or the listener's own
# (`Generate Summary Results`). 3.0 and later give the time as h:mm:ss, 2.x in seconds (`in 217s`).
# [^\S\n] is white space within the line: `\s` would run on across line ends, from each line
# over all the blank ones after it.
SUMMARY = re.compile(r"^(?:\S.*?Summariser: )?(summary|[A-Za-z][\w ]{0,80}?) ([+=])[^\S\n]+(\d+) in "
                     r"(?:(\d+):(\d\d):(\d\d)|[^\S\n]*(\d+(?:\.\d+)?)s) =[^\S\n]+([\d.]+)/s Avg:[^\S\n]+(\d+) "
                     r"Min:[^\S\n]+(\d+) Max:[^\S\n]+(\d+) Err:[^\S\n]+(\d+) \(([\d.]+)%\)", re.MULTILINE)


def summary_of(stdout: str, source: str | None) -> dict[str, float] | None:
    """The summariser's running total: the last `=` line, else the one `+` line (JMeter
    prints `=` only from the second report on)."""
    matches = list(SUMMARY.finditer(stdout))
    totals = [m for m in matches if m.group(2) == "="]
    chosen = totals[-1] if totals else (matches[0] if len(matches) == 1 else None)
    if chosen is None:
        return None
    _, _, n, h, mi, s, secs, rate, avg, low, high, err, _pct = chosen.groups()
    num = Numbers("jmeter", source)
    seconds = (num.integer(h, "summary hours") * 3600 + int(mi) * 60 + int(s) if secs is None
               else num.decimal(secs, "summary seconds"))
    return {"count": num.integer(n, "summary count"),
            "seconds": seconds,
            "rate": num.decimal(rate, "summary rate"), "avg": num.integer(avg, "summary Avg"),
            "min": num.integer(low, "summary Min"), "max": num.integer(high, "summary Max"),
            "errors": num.integer(err, "summary Err")}


def measurement_of(s: dict[str, float]) -> Measurement:
    total, errors = int(s["count"]), int(s["errors"])
    duration = total / s["rate"] if s["rate"] > 0 else None
    return Measurement(
        tool="jmeter",
        coordinated_omission=Omission.NOT_CORRECTED,  # each request timed from its actual send
        timing=Timing(duration_s=duration),
        counts=Counts(requests_total=total, requests_ok=total - errors, requests_failed=errors),
        rates=Rates(rps=s["rate"]),
        latency=Latency(min_ms=s["min"], mean_ms=s["avg"], max_ms=s["max"], resolution_ms=1.0),
        fidelity={"timing.duration_s": Fidelity.DERIVED, "counts.requests_ok": Fidelity.DERIVED},
        notes=["figures from JMeter's console summariser alone (no JTL): whole milliseconds, no "
               "percentiles, no failure classes; duration is count / rate"])
