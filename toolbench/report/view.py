"""The building blocks the templates receive: tables of already formatted values,
figures as inline SVG, and links by relative path.

Templates never format numbers or decide what is absent: a value arrives as the
text to show and, for sorting, the number behind it (None when absent)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Link:
    text: str
    href: str  # relative to the report file, so a folder of runs publishes as it is


@dataclass(frozen=True)
class Value:
    text: str
    sort: float | None = None  # None: absent, or a text column sorted by its text
    numeric: bool = False
    derived: bool = False  # computed by toolbench rather than reported by the tool
    flag: str = ""  # why the value deserves attention, shown as text next to it (never colour alone)
    links: tuple[Link, ...] = ()
    detail: str = ""  # a second, smaller line: an error message, a note


@dataclass(frozen=True)
class Column:
    label: str
    numeric: bool = False
    title: str = ""  # a longer explanation, shown as a tooltip


@dataclass(frozen=True)
class Row:
    values: tuple[Value, ...]
    bad: bool = False  # the row reports a failure
    note: str = ""  # a full-width line under the row


@dataclass(frozen=True)
class Table:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    caption: str = ""
    sortable: bool = True

    @property
    def has_notes(self) -> bool:
        return any(row.note for row in self.rows)


@dataclass(frozen=True)
class Figure:
    svg: str
    caption: str
    alt: str  # what the chart shows, in words, for readers who cannot see it


@dataclass(frozen=True)
class Fact:
    key: str
    value: str


@dataclass(frozen=True)
class Section:
    """One numbered part of the report. `absent` explains, in words, why a part has no content."""

    id: str
    title: str
    intro: str = ""
    tables: tuple[Table, ...] = ()
    figures: tuple[Figure, ...] = ()
    points: tuple[str, ...] = ()
    absent: str = ""


def text(value: str | None, absent: str = "—") -> Value:
    return Value(text=value if value else absent)


def num(shown: str, sort: float | int | None, *, derived: bool = False, flag: str = "") -> Value:
    return Value(text=shown, sort=None if sort is None else float(sort), numeric=True, derived=derived, flag=flag)


def columns(*labels: str | tuple[str, str], numeric_from: int = 99) -> tuple[Column, ...]:
    """Columns from labels; those at index >= numeric_from are right-aligned numbers.
    A (label, title) pair adds an explanation."""
    out = []
    for i, label in enumerate(labels):
        name, title = label if isinstance(label, tuple) else (label, "")
        out.append(Column(name, numeric=i >= numeric_from, title=title))
    return tuple(out)


@dataclass(frozen=True)
class IndexEntry:
    """One run on the index page of a published site."""

    title: str
    href: str
    date: str
    scenario: str
    status: str
    cells: str
    headline: str
    sort_date: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
