"""A CSV JTL's timeStamp as a formatted date, when JMeter was told
`jmeter.save.saveservice.timestamp_format=<a SimpleDateFormat pattern>` instead of `ms`.

toolbench reads the patterns JMeter's own CSV reader falls back to when a time stamp is no
number (CSVSaveService.DATE_FORMAT_STRINGS): all fixed-width, told apart by the first
record's value. JMeter writes them in the local time of the machine it ran on, which the
file does not name: they are read as if UTC, which leaves durations and per-second series
as they were (unless a clock change falls within the run) and shifts only the clock times.
A two-digit year (`yy`, JMeter 2.x's old default) is taken to be in 2000-2099."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from toolbench.adapters.jmeter.agg import JtlError

PATTERNS = ("yyyy/MM/dd HH:mm:ss.SSS", "yyyy/MM/dd HH:mm:ss", "yyyy-MM-dd HH:mm:ss.SSS", "yyyy-MM-dd HH:mm:ss",
            "MM/dd/yy HH:mm:ss")
_TOKEN = re.compile(r"yyyy|yy|MM|dd|HH|mm|ss|SSS")
_FIELDS = {"yyyy": "year", "yy": "year", "MM": "month", "dd": "day", "HH": "hour", "mm": "minute", "ss": "second",
           "SSS": "ms"}
_DAYS = np.array([0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])  # February checked for leap years apart


@dataclass(frozen=True)
class DateFormat:
    pattern: str  # as JMeter's property spells it
    regex: re.Pattern[str]
    fields: tuple[tuple[str, int, int], ...]  # (field, offset, width)
    literals: tuple[tuple[int, int], ...]  # (offset, byte) of the characters between them

    @property
    def width(self) -> int:
        return len(self.pattern)

    @property
    def whole_seconds(self) -> bool:
        return "SSS" not in self.pattern

    @classmethod
    def of(cls, pattern: str) -> "DateFormat":
        fields, literals, regex, at = [], [], "", 0
        for match in _TOKEN.finditer(pattern):
            for offset in range(at, match.start()):
                literals.append((offset, ord(pattern[offset])))
            regex += re.escape(pattern[at:match.start()]) + rf"(\d{{{len(match.group())}}})"
            fields.append((_FIELDS[match.group()], match.start(), len(match.group())))
            at = match.end()
        return cls(pattern, re.compile(regex + "$"), tuple(fields), tuple(literals))


FORMATS = tuple(DateFormat.of(pattern) for pattern in PATTERNS)


def format_of(text: str) -> DateFormat | None:
    """The format of a time stamp such as the first record's; None for epoch milliseconds."""
    if text.isascii() and text.isdigit():
        return None
    for fmt in FORMATS:
        if fmt.regex.match(text):
            return fmt
    raise JtlError(f"timeStamp {text[:60]!r} is neither epoch milliseconds nor a date toolbench reads "
                   f"({', '.join(PATTERNS)}: those JMeter's own CSV reader reads); the JTL was saved with another "
                   f"jmeter.save.saveservice.timestamp_format")


def note(fmt: DateFormat) -> str:
    """What a result read from such time stamps says about them."""
    text = (f"timeStamp is a date ({fmt.pattern}) in the local time of the machine JMeter ran on, which the "
            f"JTL does not name: read as UTC, the clock times may be off by that machine's offset from it; "
            f"durations and the per-second series are not")
    if fmt.whole_seconds:
        text += "; the dates have whole seconds, so each sample's start and the run's duration are known to 1 s only"
    return text


def to_ms(text: str, fmt: DateFormat) -> int | None:
    """One time stamp in epoch ms (as if UTC); None when it is not a valid date in `fmt`."""
    match = fmt.regex.match(text)
    if match is None:
        return None
    parts = dict.fromkeys(("year", "month", "day", "hour", "minute", "second", "ms"), 0)
    for (name, _, width), value in zip(fmt.fields, match.groups()):
        parts[name] = int(value) + (2000 if name == "year" and width == 2 else 0)
    try:
        when = datetime(parts["year"], parts["month"], parts["day"], parts["hour"], parts["minute"], parts["second"],
                        tzinfo=timezone.utc)
    except ValueError:  # 31 April, hour 25: JMeter's reader, not lenient, refuses them too
        return None
    return int(when.timestamp()) * 1000 + parts["ms"]


def block_ms(seg: np.ndarray, s: np.ndarray, e: np.ndarray, fmt: DateFormat) -> tuple[np.ndarray, np.ndarray]:
    """The time stamps [s, e) of every row in epoch ms (as if UTC), and the rows that hold
    no valid date in `fmt`; all rows at once, byte by byte at the format's fixed offsets."""
    n = len(s)
    bad = (e - s) != fmt.width
    at = np.where(bad, 0, s)
    top = len(seg) - 1
    for offset, byte in fmt.literals:
        bad |= seg[np.minimum(at + offset, top)] != byte
    parts = {}
    for name, offset, width in fmt.fields:
        value = np.zeros(n, np.int64)
        for i in range(width):
            digit = seg[np.minimum(at + offset + i, top)].astype(np.int64) - 48
            bad |= (digit < 0) | (digit > 9)
            value = value * 10 + digit
        parts[name] = value
    year = parts["year"] + (2000 if fmt.pattern.count("y") == 2 else 0)
    month, day = parts["month"], parts["day"]
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    days_in = _DAYS[np.clip(month, 0, 12)] - ((month == 2) & ~leap)
    bad |= (month < 1) | (month > 12) | (day < 1) | (day > days_in)
    bad |= (parts["hour"] > 23) | (parts["minute"] > 59) | (parts["second"] > 59)
    seconds = (_days_from_civil(year, month, day) * 86400 + parts["hour"] * 3600 + parts["minute"] * 60
               + parts["second"])
    values = seconds * 1000 + parts.get("ms", 0)
    bad |= values < 0
    return np.where(bad, 0, values), bad


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468
