"""oha's text summary, its default output (`--output-format text`, what it prints with --no-tui or
after its TUI), in the layouts oha has printed (src/printer.rs, `print_summary`):

- up to 0.5.8: `Success rate: 1.0000` (a ratio), times in `secs`, `Latency distribution:` with
  `10% in 0.0205 secs`;
- 0.5.9 on: the rate in percent (`100.00%`), `Response time distribution:` with `10.00% in ...`;
- 1.9 on: the unit of the times chosen from the slowest (ns, us, ms, sec, min, hr; `10 sec` and
  `10 min` up to 1.15) or given by `-u`; times with four decimals in it.

Its counts are those of the JSON: the requests by status (`Status code distribution`) and the
requests without a response by error text (`Error distribution`). Several summaries appended to
one file are one run each (Adapter.parts); a summary is not merged with another."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from toolbench.errors import ParseError
from toolbench.record.numbers import Numbers

# oha's time scales (src/timescale.rs) in seconds; `secs`: what oha printed before 1.9.
TIME_UNITS_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "sec": 1.0, "secs": 1.0, "10 sec": 10.0, "min": 60.0,
                "10 min": 600.0, "hr": 3600.0}
# byte_unit's binary units, as oha prints `Total data`.
BYTE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}
PCT_NAMES = {"50": "p50_ms", "75": "p75_ms", "90": "p90_ms", "95": "p95_ms", "99": "p99_ms", "99.9": "p999_ms"}
_DISTRIBUTIONS = ("Response time distribution:", "Latency distribution:")
_PERCENTILE = re.compile(r"([0-9]{1,3}(?:\.[0-9]{1,4})?)% in (.{1,60})")
_COUNTED = re.compile(r"\[([0-9]{1,20})\] (.{1,100000})")
_HEAD = "Summary:"
# What the summary prints that toolbench does not keep, and why.
NOT_KEPT = {"Requests/sec": "its rate counts the requests aborted at the end of a -z run too",
            "Size/request": "derived from the total", "Size/sec": "derived from the total"}


@dataclass
class Summary:
    """One summary's lines by section: the heading (without its colon) -> its lines."""

    fields: dict[str, str] = field(default_factory=dict)  # Summary's `Key:\tvalue`
    percentiles: list[tuple[str, str]] = field(default_factory=list)  # (p, the time as printed)
    codes: list[str] = field(default_factory=list)  # `[200] 200 responses`
    errors: list[str] = field(default_factory=list)  # `[20] Connection refused (os error 111)`
    unread: list[str] = field(default_factory=list)  # the sections toolbench does not read


def is_summary(text: str) -> bool:
    return text.startswith(f"{_HEAD}\n  Success rate:")


def _starts(text: str) -> list[int]:
    """Where each summary begins: at a `Summary:` line."""
    found = [0] if text.startswith(_HEAD + "\n") else []
    at = text.find(f"\n{_HEAD}\n")
    while at >= 0:
        found.append(at + 1)
        at = text.find(f"\n{_HEAD}\n", at + 1)
    return found


def parts(text: str) -> list[str]:
    count = len(_starts(text))
    return [f"run{n}" for n in range(1, count + 1)] if count > 1 else []


def chosen(text: str, part: str | None, source: str | None) -> str:
    """The summary `part` names (run<N>), or the only one."""
    starts = _starts(text)
    if not starts:
        raise ParseError("oha", "no `Summary:` line: not oha's text summary", source)
    if part == "all":
        raise ParseError("oha", "the summaries of several oha runs cannot be merged: each is one run's summary, "
                         "without the per-request times that would add up; each is read as a result of its own",
                         source)
    index = 0
    if part:
        index = int(part[3:]) - 1 if part.startswith("run") and part[3:].isdigit() else -1
        if not 0 <= index < len(starts):
            raise ParseError("oha", f"the file holds {len(starts)} summaries, not {part}", source)
    elif len(starts) > 1:
        raise ParseError("oha", f"the file holds {len(starts)} summaries, of {len(starts)} runs: `toolbench parse` "
                         "reads each as a result of its own", source)
    return text[starts[index]:starts[index + 1] if index + 1 < len(starts) else len(text)]


def read(text: str) -> Summary:
    """The sections of one summary."""
    summary = Summary()
    section = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            section = line.strip()
            if section not in (_HEAD, *_DISTRIBUTIONS, "Status code distribution:", "Error distribution:"):
                summary.unread.append(section.rstrip(":"))
            continue
        body = line.strip()
        if section == _HEAD:
            key, _, value = body.partition(":")
            summary.fields[key.strip()] = value.strip()
        elif section in _DISTRIBUTIONS and (m := _PERCENTILE.fullmatch(body)):
            summary.percentiles.append((m.group(1), m.group(2)))
        elif section == "Status code distribution:":
            summary.codes.append(body)
        elif section == "Error distribution:":
            summary.errors.append(body)
    return summary


def counted(lines: list[str], what: str, num: Numbers) -> dict[str, int]:
    """`[count] text` lines (errors) as text -> count."""
    found: dict[str, int] = {}
    for line in lines:
        m = _COUNTED.fullmatch(line)
        if m is None:
            raise num.error(what, f"expected `[count] text`, got {line[:40]!r}")
        found[m.group(2)] = found.get(m.group(2), 0) + num.integer(m.group(1), f"{what} count")
    return found


def status_codes(lines: list[str], num: Numbers) -> dict[int, int]:
    """`[200] 200 responses` lines as code -> count."""
    codes: dict[int, int] = {}
    for line in lines:
        code, _, rest = line.partition("] ")
        count, _, word = rest.partition(" ")
        if not re.fullmatch(r"\[[1-5][0-9][0-9]", code) or word != "responses" or int(code[1:]) in codes:
            raise num.error("Status code distribution", f"expected `[code] count responses`, got {line[:40]!r}")
        codes[int(code[1:])] = num.integer(count, f"Status code distribution [{code[1:]}]")
    return codes


def time_ms(text: str, num: Numbers, what: str) -> tuple[float, float]:
    """A time as oha prints it (`230.6201 ms`, `0.0318 secs`) in ms, and the step of its last digit."""
    value, _, unit = text.strip().partition(" ")
    if unit not in TIME_UNITS_S:
        raise num.error(what, f"expected a time in one of oha's units, got {text[:40]!r}")
    decimals = len(value.partition(".")[2])
    scale_ms = TIME_UNITS_S[unit] * 1000.0
    return num.decimal(value, what) * scale_ms, scale_ms / 10 ** decimals


def size_bytes(text: str, num: Numbers) -> tuple[int, str | None]:
    """`Total data` in bytes, and a note when oha printed it rounded (`2.54 KiB`)."""
    value, _, unit = text.strip().partition(" ")
    if unit not in BYTE_UNITS:
        raise num.error("Total data", f"expected a size in bytes or KiB, MiB..., got {text[:40]!r}")
    if unit == "B":
        return num.integer(value, "Total data"), None
    exact = num.decimal(value, "Total data") * BYTE_UNITS[unit]
    decimals = len(value.partition(".")[2])
    return round(exact), (f"received bytes from oha's `Total data: {text.strip()}`, rounded to "
                          f"{10 ** -decimals:g} {unit}")
