"""How numbers read in tables: absent is a dash, never 0; a value below the
tool's resolution reads as "<1 ms", not as 0."""
from __future__ import annotations

from typing import Iterable

from toolbench.contract.ramp import RAMP_MULTIPLE
from toolbench.record.schema import Omission

ABSENT = "—"


def number(value: float | int | None, resolution: float | None = None) -> str:
    if value is None:
        return ABSENT
    if resolution and 0 <= value < resolution:
        return f"<{resolution:g}"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def size(value: int | float | None) -> str:
    if value is None:
        return ABSENT
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return ABSENT


def below_resolution(value: float | None, resolution: float | None) -> bool:
    """A value the tool could only round to zero: it says "less than one step", not 0."""
    return value is not None and bool(resolution) and 0 <= value < (resolution or 0)


def percent(value: float | None, digits: int = 1) -> str:
    return ABSENT if value is None else f"{value:.{digits}f} %"


def change(new: float | None, old: float | None) -> str:
    """The relative change from old to new, signed, or absent when it cannot be computed."""
    if new is None or old is None or old == 0:
        return ABSENT
    delta = (new - old) / old * 100.0
    return "±0 %" if abs(delta) < 0.05 else f"{delta:+.1f} %"


def when(iso: str | None) -> str:
    """An ISO 8601 UTC time as a reader wants it: date and minute."""
    if not iso or len(iso) < 16:
        return iso or ABSENT
    return f"{iso[:10]} {iso[11:16]} UTC"


def yes_no(value: bool | None, yes: str = "on", no: str = "off") -> str:
    return ABSENT if value is None else (yes if value else no)


SHORT_OF_RAMP = (f"measured over less than {RAMP_MULTIPLE:g} times the tool's ramp to its steady rate: "
                 "the rate is understated")


# A cell disturbed by other work on the machine (Status.DISTURBED), and a median that left such cells out.
DISTURBED = "disturbed by other work on the machine: shown, and left out of the verdict, rankings and charts"
DISTURBED_LEFT_OUT = "repetitions disturbed by other work on the machine were left out of this figure"


def resolution_flag(value: float | None, resolution: float | None) -> str:
    return "below the tool's resolution" if below_resolution(value, resolution) else ""


# Coordinated omission, as a result records it (schema: Measurement.coordinated_omission).
OMISSION_TITLE = ("coordinated omission: 'corrected' times each request from when it was meant to be sent, so "
                  "a request held back behind a slow one counts its wait; 'not corrected' times it from when "
                  "it was actually sent, so that wait is missing and the tail reads better than it was; "
                  "— the tool's adapter does not say")
OMISSION_TEXT = {"corrected": "corrected", "not_corrected": "not corrected"}


def omission(values: Iterable[Omission | None]) -> str:
    """What the results of one row say about coordinated omission: one word, `mixed` when
    repetitions disagree, absent when none says."""
    said = {OMISSION_TEXT[v.value] for v in values if v is not None}
    return ABSENT if not said else said.pop() if len(said) == 1 else "mixed"
