"""How numbers read in tables: absent is a dash, never 0; a value below the
tool's resolution reads as "<1 ms", not as 0."""
from __future__ import annotations

ABSENT = "—"


def number(value: float | int | None, resolution: float | None = None) -> str:
    if value is None:
        return ABSENT
    if resolution and 0 <= value < resolution:
        return f"<{resolution:g}"
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 100:
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
