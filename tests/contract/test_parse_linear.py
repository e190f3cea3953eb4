"""Every registered adapter reads inputs made to be slow in time linear in their size. A regex
that backtracks (`^\\s*` from each of thousands of blank lines over all the others, `(\\S.*?)\\s*$`
over a line of spaces) turns a few hundred kilobytes into minutes: wrk's 40,000 blank lines took
17 s, three long Locust error lines 39 s, before they were made linear. Each input below ends in
a Measurement or a ParseError, never a crash. No time is asserted: each test has a hang guard
(pytest-timeout) several times what a busy two-core machine takes to read all its inputs
linearly, and well below what the quadratic readings took on one.

The inputs are built from the tool's recorded output (tests/fixtures/<tool>/, each kind of line
it holds: lines that differ in their numbers are one kind), for stdout, stderr, every role of a
recorded file and every output file the adapter's commands write (Invocation.outputs, steps):
- 40,000 blank (and whitespace-only) lines, alone and inserted into recordings;
- 40,000 near-matching lines: one recorded line repeated, for each kind; every kind in turn,
  whole and cut short, alone and in place of the role's file in recordings;
- three lines of 50 KB: a recorded line cut at three places, each followed by 50 KB of what keeps
  it almost matching (its own tail repeated, spaces, digits and spaces) and junk, alone and
  inserted after the line they mimic in its recording, so that a parser reading section by
  section meets them in the section they belong to.
`toolbench parse` also asks each file's role and whether the tool wrote it (from its head) and the
runs it holds (Adapter.parts): those are held to the same."""
from __future__ import annotations

import dataclasses
import re
from functools import lru_cache
from pathlib import Path

import pytest

from helpers.recordings import recorded_runs
from toolbench.contract import registry
from toolbench.contract.adapter import CLASSIFY_CHARS, Adapter, Found, RawOutput
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError, ParserCrash
from toolbench.record.schema import Measurement
from toolbench.testing.contract import representative_cells

STREAMS = ("stdout", "stderr")
LINES = 40_000
LONG = 50_000  # bytes of one long line
JUNK = b"\x00~junk\xff"  # what no pattern expects, so that a near match fails at the very end
# What keeps a cut line almost matching, besides its own tail: runs of spaces and of numbers.
FILLERS = (b" ", b"0 ")
REPEATED = 120  # bytes of a line repeated 40,000 times: a longer one adds size, not another kind of input
RECORDINGS = 6  # recorded runs an input is put into, at most, per role
FALLBACK = b"Requests/sec: 1"  # a line for a tool without recordings
# The slowest test reads its inputs in 5 s on a 2-core machine at a load of 1, in 8 s at a load
# of 4; before the fix, wrk's blank lines and Locust's long lines each overran 120 s.
HANG_GUARD_S = 120

Group = tuple[tuple[Path, str], ...]  # one recorded run's files, each with its role


@dataclasses.dataclass(frozen=True)
class Sample:
    """One kind of recorded line (lines that differ only in their numbers and padding are one
    kind), and where it was recorded: the group, the file and the line's index in it."""

    group: Group
    path: Path
    index: int
    line: bytes


@lru_cache(maxsize=None)
def recorded_groups(name: str) -> tuple[Group, ...]:
    """The recorded runs of a tool, each file with the role `toolbench parse` gives it."""
    adapter = registry.adapters()[name]
    return tuple(tuple((path, role_of(adapter, path, path.read_bytes())) for path in run)
                 for run in recorded_runs(adapter))


def role_of(adapter: Adapter, path: Path, data: bytes) -> str:
    if path.name.endswith(".stderr.txt"):
        return "stderr"
    return adapter.classify(path, data[:CLASSIFY_CHARS * 2].decode(errors="replace")[:CLASSIFY_CHARS])


def roles(name: str) -> list[str]:
    """stdout, stderr, the roles of the recorded files and those of the files the tool writes
    (Invocation.outputs and the steps' files, for each cell of the contract's it runs)."""
    adapter = registry.adapters()[name]
    found = {role for group in recorded_groups(name) for _, role in group} | set(STREAMS)
    if not adapter.read_only:
        for cell in representative_cells(name):
            if adapter.supports(cell).ok:
                invocation = adapter.build(cell, Path("/nonexistent"), Found("/bin/" + name, "1"))
                found |= set(invocation.outputs) | {step.role for step in invocation.steps}
    return sorted(found)


@lru_cache(maxsize=None)
def samples(name: str, role: str) -> tuple[Sample, ...]:
    """Each kind of line the recordings hold for `role` (of a long file, its head and tail); for
    a role no recording has, each kind of line of any of them."""
    kinds: dict[bytes, Sample] = {}
    recorded = {file_role for group in recorded_groups(name) for _, file_role in group}
    for group in recorded_groups(name):
        for path, file_role in group:
            if file_role != role and role in recorded:
                continue
            lines = path.read_bytes().split(b"\n")
            picked = list(range(min(len(lines), 40))) + list(range(max(40, len(lines) - 20), len(lines)))
            for i in picked:
                if lines[i].strip() and text(lines[i]):  # of a binary file, no "line" is a kind of line
                    # Lines that differ in their numbers and padding are one kind.
                    kind = re.sub(rb"  +", b"  ", re.sub(rb"[0-9.]+", b"0", lines[i]))
                    kinds.setdefault(kind, Sample(group, path, i, lines[i]))
    return tuple(kinds.values())


def text(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\x00" not in line


def read(adapter: Adapter, group: Group, replaced: Path | None, role: str, data: bytes, tmp: Path) -> str:
    """Reads `group` as `toolbench parse` does, with `data` as the file of `role` (in place of
    `replaced`, or added): its role and claim from its head, its parts, and each part's (the
    first and last: every part re-reads the whole output) Measurement or ParseError."""
    path = tmp / ("input.stderr.txt" if role == "stderr" else f"input.{role}")
    path.write_bytes(data)
    head = data[:CLASSIFY_CHARS * 2].decode(errors="replace")[:CLASSIFY_CHARS]
    assert isinstance(adapter.classify(path, head), str)
    assert isinstance(adapter.recognizes(path, head), bool)
    files = [(p, r) for p, r in group if p != replaced] + [(path, role)]
    streams = {r: "".join(p.read_text(errors="replace") for p, pr in files if pr == r) for r in STREAMS}
    raw = RawOutput(stdout=streams["stdout"], stderr=streams["stderr"],
                    files={r: p for p, r in files if r not in STREAMS}, source=str(path))
    try:
        parts = adapter.parts(raw)
    except ParserCrash:
        raise
    except ParseError:
        return "parse error"
    said = [outcome(adapter, dataclasses.replace(raw, part=part)) for part in (parts[:1] + parts[-1:] or [None])]
    return ", ".join(said)


def outcome(adapter: Adapter, raw: RawOutput) -> str:
    try:
        m = parse_checked(adapter, raw)
    except ParserCrash:
        raise
    except ParseError:
        return "parse error"
    assert isinstance(m, Measurement)
    return "measurement"


def recordings_with(name: str, role: str) -> list[tuple[Group, Path]]:
    """Up to RECORDINGS recorded runs with a file of `role`, spread over all of them (each
    recording read again costs time, and a few cover its ways of failing), with that file."""
    found = [(group, path) for group in recorded_groups(name) for path, file_role in group if file_role == role]
    step = max(1, -(-len(found) // RECORDINGS))
    return found[::step]


def insert_after(data: bytes, index: int, lines: bytes) -> bytes:
    split = data.split(b"\n")
    return b"\n".join(split[:index + 1] + [lines] + split[index + 1:])


def long_lines(line: bytes, filler: bytes) -> bytes:
    """Three 50 KB lines: `line` cut at a third, two thirds and its end, each followed by what
    keeps it almost matching and by junk."""
    out = []
    for cut in (len(line) // 3, 2 * len(line) // 3, len(line)):
        fill = filler or line[cut:] or line
        out.append(line[:cut] + fill * (LONG // len(fill)) + JUNK)
    return b"\n".join(out)


def kinds_of_line(name: str, role: str) -> list[bytes]:
    return [s.line for s in samples(name, role)] or [FALLBACK]


def mixed_lines(name: str, role: str, cut: bool) -> bytes:
    """40,000 lines of every kind in turn, whole or cut short at a fifth to four fifths."""
    kinds = kinds_of_line(name, role)
    if cut:
        kinds = [line[:len(line) * k // 5] for line in kinds for k in range(1, 5)]
    return b"\n".join(kinds[i % len(kinds)] for i in range(LINES))


CASES = [(name, role) for name in sorted(registry.adapters()) for role in roles(name)]
IDS = [f"{name}-{role}" for name, role in CASES]


@pytest.mark.timeout(HANG_GUARD_S)
@pytest.mark.parametrize("name, role", CASES, ids=IDS)
def test_blank_lines(name: str, role: str, tmp_path: Path):
    adapter = registry.adapters()[name]
    for blank in (b"\n" * LINES, b"  \r\n" * LINES):
        read(adapter, (), None, role, blank, tmp_path)
    for group, path in recordings_with(name, role):  # after a recording's first line, before its last
        data = path.read_bytes()
        for at in (0, data.count(b"\n") - 1):
            read(adapter, group, path, role, insert_after(data, at, b"\n" * LINES), tmp_path)


@pytest.mark.timeout(HANG_GUARD_S)
@pytest.mark.parametrize("name, role", CASES, ids=IDS)
def test_near_matching_lines(name: str, role: str, tmp_path: Path):
    adapter = registry.adapters()[name]
    for line in kinds_of_line(name, role):  # one line 40,000 times (of a long one, its head)
        read(adapter, (), None, role, b"\n".join([line[:REPEATED]] * LINES), tmp_path)
    for cut in (False, True):  # every kind in turn, alone and in place of the role's file in recordings
        data = mixed_lines(name, role, cut)
        read(adapter, (), None, role, data, tmp_path)
        for group, path in recordings_with(name, role):
            read(adapter, group, path, role, data, tmp_path)


@pytest.mark.timeout(HANG_GUARD_S)
@pytest.mark.parametrize("name, role", CASES, ids=IDS)
def test_long_near_matching_lines(name: str, role: str, tmp_path: Path):
    adapter = registry.adapters()[name]
    for sample in samples(name, role) or (Sample((), Path("-"), 0, FALLBACK),):
        for filler in (b"", *FILLERS):
            lines = long_lines(sample.line, filler)
            read(adapter, (), None, role, lines, tmp_path)
            if sample.group:  # after the line they mimic, in its recording
                data = insert_after(sample.path.read_bytes(), sample.index, lines)
                read(adapter, sample.group, sample.path, role, data, tmp_path)
