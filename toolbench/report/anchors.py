"""Ids for the parts of a report that other parts link to: a chart's point or a verdict's
number links to the table row it came from.

An id is built from untrusted names (a run's label, a cell id from a stored result), so it
keeps only characters that are safe in an id and a URL fragment, and a short hash of the
whole name keeps two names that differ only in dropped characters apart."""
from __future__ import annotations

import hashlib
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def _id(kind: str, *parts: str) -> str:
    whole = "\x1f".join(parts)
    readable = _UNSAFE.sub("-", "-".join(p for p in parts if p)).strip("-")[:60]
    digest = hashlib.blake2s(whole.encode("utf-8"), digest_size=3).hexdigest()
    return f"{kind}-{readable}-{digest}" if readable else f"{kind}-{digest}"


def cell(run_label: str, cell_id: str) -> str:
    """The row of one cell (one repetition) in the "All results" table."""
    return _id("cell", run_label, cell_id)


def point(run_label: str, series_label: str, where: str) -> str:
    """The row of one series at one place (its repetitions together) in the like-for-like table."""
    return _id("point", run_label, series_label, where)
