"""The parts of a workload (toolbench.scenario.workload_read) that are not requests: the CSV data
file and the files a workload names, found under the scenario's folder and read bounded; the
think time; the stages."""
from __future__ import annotations

import csv
import io
import os
import re
import stat
from pathlib import Path

from toolbench.scenario import yamlread
from toolbench.scenario.workload import DATA_AT_END, DATA_PER, DataFile, Stage, ThinkTime
from toolbench.scenario.yamlread import Node

MAX_CSV_BYTES = 16 << 20
MAX_STAGES = 100
NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")  # a variable's name: toolbench.scenario.workload.VARIABLE without the ${}
NAME_RULE = "a lower-case letter, then lower-case letters, digits or '_', at most 32 characters"


def data_file(node: Node, folder: Path | None) -> DataFile:
    """The data file; with no `folder` (a stored workload's shape) it is not opened: no columns, 0 rows."""
    keys = node.items(("file", "per", "at_end"))
    if "file" not in keys:
        raise node.error("missing required key 'file'")
    path, columns, rows = "", (), 0
    if folder is not None:
        found, data = file_under(keys["file"], folder, MAX_CSV_BYTES, "a data file")
        path = str(found)
        columns, rows = _csv(keys["file"], data)
    return DataFile(path=path, given=keys["file"].string(), columns=columns, rows=rows,
                    per=keys["per"].choice(DATA_PER) if "per" in keys else "user",
                    at_end=keys["at_end"].choice(DATA_AT_END) if "at_end" in keys else "recycle")


def file_under(node: Node, folder: Path, limit: int, what: str) -> tuple[Path, bytes]:
    """The file `node` names, relative to `folder` and inside it once every link is followed, a
    regular file of at most `limit` bytes."""
    given = node.string()
    if "\x00" in given or Path(given).is_absolute():
        raise node.error(f"expected a path relative to the scenario's folder, got {given!r}")
    root = folder.resolve()
    path = (root / given).resolve()
    if not path.is_relative_to(root):
        raise node.error(f"{given!r} leads outside the scenario's folder {root}")
    try:
        # No link is left to follow after resolve(): O_NOFOLLOW refuses one put there since;
        # O_NONBLOCK: a FIFO never makes the read wait.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise node.error(f"{given!r}: cannot read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise node.error(f"{given!r} is not a regular file")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise node.error(f"{given!r}: larger than {limit} bytes, the most for {what}")
    return path, data


def _csv(node: Node, data: bytes) -> tuple[tuple[str, ...], int]:
    """The header's columns and the count of rows, every row as wide as the header."""
    given = node.string()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise node.error(f"{given}:{line}: not UTF-8 text") from None
    if text.startswith("\ufeff"):
        raise node.error(f"{given}:1: starts with a byte-order mark, which JMeter and Gatling read as part of the "
                         "first column's name: save it without one")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if not header:
            raise node.error(f"{given}:1: expected a header row naming the variables")
        for name in header:
            if not NAME.fullmatch(name):
                raise node.error(f"{given}:1: not a variable name: {name[:40]!r} (expected {NAME_RULE})")
        if len(set(header)) != len(header):
            raise node.error(f"{given}:1: a column named twice")
        rows = 0
        for row in reader:
            rows += 1
            if len(row) != len(header):
                raise node.error(f"{given}:{reader.line_num}: {len(row)} values, the header names {len(header)}")
            if not all(value.isprintable() for value in row):
                raise node.error(f"{given}:{reader.line_num}: a value with a control character or a line break")
    except csv.Error as exc:
        raise node.error(f"{given}:{reader.line_num}: not CSV: {exc}") from None
    if rows == 0:
        raise node.error(f"{given}: expected at least one row after the header")
    return tuple(header), rows


def think(node: Node) -> ThinkTime:
    if not node.is_mapping():
        value = node.duration_s()
        return ThinkTime(value, value)
    keys = node.items(("uniform",))
    if "uniform" not in keys or not keys["uniform"].is_sequence():
        raise node.error("expected a duration (50ms) or {uniform: [20ms, 80ms]}")
    bounds = [child.duration_s() for child in keys["uniform"].elements()]
    if len(bounds) != 2:
        raise keys["uniform"].error(f"expected two durations, the least and the most, got {len(bounds)}")
    if bounds[0] > bounds[1]:
        raise keys["uniform"].error(f"the least, {bounds[0]:g}s, is more than the most, {bounds[1]:g}s")
    return ThinkTime(bounds[0], bounds[1])


def stages(node: Node) -> tuple[Stage, ...]:
    children = list(node.elements())
    if not children or len(children) > MAX_STAGES:
        raise node.error(f"expected from 1 to {MAX_STAGES} stages")
    stages: list[Stage] = []
    for child in children:
        keys = child.items(("duration", "users", "rate"))
        if "duration" not in keys or ("users" in keys) == ("rate" in keys):
            raise child.error("expected {duration, users} or {duration, rate}")
        duration = keys["duration"].duration_s()
        if duration <= 0:
            raise keys["duration"].error("expected a positive duration")
        kind = "users" if "users" in keys else "rate"
        if stages and (stages[0].users is not None) != (kind == "users"):
            raise keys[kind].error("every stage gives users (a closed model) or every one a rate (open), not both")
        if kind == "users":
            users = keys["users"].scalar()
            if isinstance(users, bool) or not isinstance(users, int) or not 0 <= users <= yamlread.MAX_CONCURRENCY:
                raise keys["users"].error(f"expected a whole number of users from 0 to {yamlread.MAX_CONCURRENCY}")
            stages.append(Stage(duration, users=users))
        else:
            stages.append(Stage(duration, rate_rps=keys["rate"].number(yamlread.MAX_RATE)))
    if sum(s.duration_s for s in stages) > yamlread.MAX_DURATION_S:
        raise node.error(f"the stages last more than {yamlread.MAX_DURATION_S:g}s")
    if not any(s.users or s.rate_rps for s in stages):
        raise node.error("no stage has any load: give one more than 0 users or a rate above 0")
    return tuple(stages)
