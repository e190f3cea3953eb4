"""bombardier's plain-text result, its default output (without `-o json`), read into a
Measurement; toolbench.adapters.bombardier finds it in the output and reads the JSON one.

What the text result holds (its template, templates.go, the same from v1.2.4 to v1.2.6):
- `Reqs/sec` avg, stdev and max: over bombardier's rate samples of a few milliseconds each,
  not the run's rate; and `Throughput`: the bytes read and written together per second.
  It prints no run time and no byte count, so no duration, rate or byte count can be had
  from it (its JSON has them): those figures are kept in a note, not guessed;
- `Latency` avg, stdev and max, and with `-l` the p50/75/90/95/99, each with two decimals of
  the unit printed (us, ms, s, m, h), over every request, failed ones too;
- the responses by status class, `others` (requests without a status: its errors; bombardier
  before v1.0 called them `errored`) and the error texts with their counts;
- before it, unless `-p r`: `Bombarding <url> with N request(s) | for D using C connection(s)`
  and the progress bar, neither of which a figure is read from but the URL and connections."""
from __future__ import annotations

import re

from toolbench.adapters import units
from toolbench.errors import ParseError
from toolbench.record import failures
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Counts, Failures, Fidelity, Latency, Measurement, Omission, Percentiles

# [^\S\n] is white space within a line: no pattern here runs across a line end.
HEADER = re.compile(r"^Statistics +Avg +Stdev +Max[^\S\n]*$", re.MULTILINE)
INTRO = re.compile(r"^Bombarding (\S+) (?:with (\d+) requests?(?:\(s\))?|for (\S+)) using (\d+) "
                   r"connections?(?:\(s\))?[^\S\n]*$", re.MULTILINE)
_REQS = re.compile(r"^  Reqs/sec +(\S+) +(\S+) +(\S+)[^\S\n]*$", re.MULTILINE)
_LATENCY = re.compile(r"^  Latency +(\S+) +(\S+) +(\S+)[^\S\n]*$", re.MULTILINE)
_DISTRIBUTION = re.compile(r"^  Latency Distribution\b[^\n]*", re.MULTILINE)
_PCT = re.compile(r"^ +(50|75|90|95|99)% +(\S+)[^\S\n]*$", re.MULTILINE)
_CODES = re.compile(r"^    1xx - (\d+), 2xx - (\d+), 3xx - (\d+), 4xx - (\d+), 5xx - (\d+)[^\S\n]*$",
                    re.MULTILINE)
_OTHERS = re.compile(r"^    (others|errored) - (\d+)[^\S\n]*$", re.MULTILINE)
_ERRORS = re.compile(r"^  Errors:[^\S\n]*$", re.MULTILINE)
_THROUGHPUT = re.compile(r"^  Throughput: +(\S+)/s[^\S\n]*$", re.MULTILINE)
_NO_DATA = re.compile(r"^  There wasn't enough data to compute statistics for (requests|latencies)\.", re.MULTILINE)
_BINARY = re.compile(r"([\d.]+)(?:KB|MB|GB|TB|PB)?")  # format.go's binary units
_PCT_NAMES = {"50": "p50_ms", "75": "p75_ms", "90": "p90_ms", "95": "p95_ms", "99": "p99_ms"}
# The step of two decimals of each unit bombardier prints a time in, in ms (format.go: µs up
# to 850 of them, then ms; from 1 s on, s, m and h), never finer than the µs it measures in.
_STEP_MS = {"us": 0.001, "ms": 0.01, "s": 10.0, "m": 600.0, "h": 36_000.0}


def parse_text(text: str, num: Numbers, failure_table: failures.Table) -> Measurement:
    """One run's text result (the output from its intro, if any, to its Throughput line)."""
    header = HEADER.search(text)
    codes = _CODES.search(text, header.end()) if header else None
    if header is None or codes is None:
        raise num.error("the text result", "no `Statistics` table with its `HTTP codes` line")
    classes = [num.integer(v, f"HTTP codes {k}xx") for v, k in zip(codes.groups(), "12345")]
    others_line = _OTHERS.search(text, codes.end())
    if others_line is None:
        raise num.error("HTTP codes", "no `others - N` line after them")
    others = num.integer(others_line.group(2), others_line.group(1))
    errors = _errors(text, others_line.end(), num)
    by_class = failures.tally(errors, failure_table)
    if sum(errors.values()) != others:
        by_class = dict.fromkeys(failures.CLASSES, 0) | {"other": others}  # texts that do not add up: unclassified
    ok = classes[0] + classes[1] + classes[2]
    total = ok + classes[3] + classes[4] + others
    notes = ["figures from bombardier's text result; its latency times every request, failed ones too",
             "bombardier's text result gives no run time and no byte count (its JSON does, with -o json): "
             "no duration, rate or bytes are derived"]
    notes += _unread(text, header.end(), codes.start(), num)
    intro = INTRO.search(text, 0, header.start())
    if intro and intro.group(3):
        notes.append(f"it was asked to run for {intro.group(3)}")
    return Measurement(
        tool="bombardier",
        counts=Counts(requests_total=total, requests_ok=ok, requests_failed=total - ok,
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        read=by_class["read"], reset=by_class["reset"], other=by_class["other"],
                                        http_4xx=classes[3], http_5xx=classes[4])),
        latency=_latency(text, header.end(), codes.start(), total, num, notes),
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity={name: Fidelity.DERIVED for name in ("counts.requests_total", "counts.requests_ok",
                                                       "counts.requests_failed")},
        notes=notes,
        url=intro.group(1) if intro else None,
        concurrency=num.integer(intro.group(4), "connections") if intro else None,
    )


def _errors(text: str, start: int, num: Numbers) -> dict[str, int]:
    """The `Errors:` block, one `<text> - <count>` a line, up to the Throughput line."""
    block = _ERRORS.match(text, start + 1) if text.startswith("\n", start) else None
    if block is None:
        return {}
    end = _THROUGHPUT.search(text, block.end())
    found: dict[str, int] = {}
    for line in text[block.end():end.start() if end else len(text)].splitlines():
        said, sep, count = line.strip().rpartition(" - ")
        if not line.strip():
            continue
        if not sep or not said:
            raise num.error("Errors", f"expected `<error> - <count>`, got {line.strip()[:60]!r}")
        found[said] = found.get(said, 0) + num.integer(count, f"Errors: {said[:40]}")
    return found


def _unread(text: str, start: int, end: int, num: Numbers) -> list[str]:
    """What the text prints that has no place in the result: said in notes, with its figures."""
    notes = []
    if reqs := _REQS.search(text, start, end):
        for v, what in zip(reqs.groups(), ("avg", "stdev", "max")):
            num.decimal(v, f"Reqs/sec {what}")
        notes.append("its Reqs/sec, avg {}, stdev {}, max {}, are over its rate samples of a few milliseconds, "
                     "not the run's rate: not taken as one".format(*reqs.groups()))
    if said := _THROUGHPUT.search(text, end):
        amount = _BINARY.fullmatch(said.group(1))
        if amount is None:
            raise num.error("Throughput", f"expected bytes with a unit, got {said.group(1)[:40]!r}")
        num.decimal(amount.group(1), "Throughput")
        notes.append(f"its Throughput, {said.group(1)}/s, counts bytes read and written together: not taken "
                     "as bytes received")
    for missing in _NO_DATA.finditer(text, start, end):
        notes.append(f"bombardier had too little data for statistics of its {missing.group(1)}")
    return notes


def _latency(text: str, start: int, end: int, total: int, num: Numbers, notes: list[str]) -> Latency:
    row = _LATENCY.search(text, start, end)
    if not total or row is None:
        return Latency()
    printed = list(row.groups())
    pcts: dict[str, float] = {}
    tables = list(_DISTRIBUTION.finditer(text, row.end(), end))
    if len(tables) > 1:  # a build that also prints them by status class: the first is of every request
        notes.append("its latency distributions after the first ({}) are not read".format(
            ", ".join(t.group(0).strip() for t in tables[1:])[:200]))
        end = tables[1].start()
    for m in _PCT.finditer(text, row.end(), end):
        pcts[_PCT_NAMES[m.group(1)]] = units.time_ms(num, m.group(2), f"Latency Distribution {m.group(1)}%")
        printed.append(m.group(2))
    if not pcts:
        notes.append("bombardier prints its latency percentiles only with -l (--latencies)")
    mean, sd, top = (units.time_ms(num, v, f"Latency {what}") for v, what in zip(row.groups(), ("avg", "stdev", "max")))
    step = max(_STEP_MS.get(re.sub(r"[\d.]", "", v), 0.001) for v in printed)
    return Latency(mean_ms=mean, stdev_ms=sd, max_ms=top, percentiles=Percentiles(**pcts), resolution_ms=step)


def no_result(text: str, stderr: str, source: str | None) -> ParseError:
    """Why an output holds no result, naming what it does hold; what bombardier said is only
    ever its stderr (its own errors go to stdout, where they are not quoted as said)."""
    if INTRO.search(text):
        why = ("its intro (`Bombarding ...`) but no result: bombardier was stopped before the end, or run "
               "with --print (-p) without r")
    elif text.strip():
        why = "no result, in text or JSON (-o json); a --format path:<template> of one's own is not read"
    else:
        why = "no output on stdout"
    said = stderr.strip().splitlines()[-1:] or ["nothing on stderr"]
    return ParseError("bombardier", f"{why}; bombardier said: {said[0][:200]}", source)
