"""The building blocks the templates receive: tables of already formatted values,
figures as inline SVG, and links by relative path.

Templates never format numbers or decide what is absent: a value arrives as the
text to show and, for sorting, the number behind it (None when absent)."""
from __future__ import annotations

from dataclasses import dataclass


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
    error: str = ""  # a full-width line under the row, saying what went wrong
    disturbed: bool = False  # the row is a cell disturbed by other work on the machine (`error` says how)
    anchor: str = ""  # the row's id, so a chart's point or a verdict's number can link to it (report.anchors)


@dataclass(frozen=True)
class Table:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    caption: str = ""
    sortable: bool = True
    css: str = ""  # a class for tables that need their own layout

    @property
    def has_notes(self) -> bool:
        return any(row.note or row.error for row in self.rows)


@dataclass(frozen=True)
class Figure:
    svg: str
    caption: str
    alt: str  # what the chart shows, in words, for readers who cannot see it
    title: str = ""  # shown above the chart; the section's title when empty


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
    side_by_side: bool = False  # small tables next to each other, where the page is wide enough
    details: tuple[str, ...] = ()  # long lists a reader opens on demand (no script needed)
    details_title: str = ""


def text(value: str | None, absent: str = "—") -> Value:
    return Value(text=value if value else absent)


def num(shown: str, sort: float | int | None, *, derived: bool = False, flag: str = "") -> Value:
    return Value(text=shown, sort=None if sort is None else float(sort), numeric=True, derived=derived, flag=flag)


def columns(*labels: str | tuple[str, str], numeric_from: int = 99, text: tuple[str, ...] = ()) -> tuple[Column, ...]:
    """Columns from labels; those at index >= numeric_from, except the ones named in `text`,
    are right-aligned numbers. A (label, title) pair adds an explanation."""
    out = []
    for i, label in enumerate(labels):
        name, title = label if isinstance(label, tuple) else (label, "")
        out.append(Column(name, numeric=i >= numeric_from and name not in text, title=title))
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
    bad: bool = False  # the run failed, was interrupted, or no cell of it finished ok
    size: str = ""  # what the run takes on the site
