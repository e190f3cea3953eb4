"""The layouts of Gatling's text simulation.log, one per line of Gatling's versions, told apart
by the log's RUN record; and the binary log of Gatling 3.13 and later, told by its first bytes.

Each is what that version's writer writes (io.gatling.core.result.writer.FileDataWriter of
Gatling 2.0 and 2.1, io.gatling.core.stats.writer.LogFileDataWriter since 2.2), recorded from
the real versions in tests/fixtures/gatling:
- 2.0, 2.1: the record's kind in the third column, after the scenario and the user id:
  `<class> <id> RUN <start> <description> 2.0`, `<scenario> <user> USER START|END <start> <end>`,
  `<scenario> <user> REQUEST <groups> <name> <request start> <request end> <response start>
  <response end> OK|KO <message> [<extra info>...]`; 2.1 writes its assertions as
  `ASSERTION PATH ...` before the RUN record;
- 2.2, 2.3: the kind first: `RUN <class> <user-defined id> <id> <start> <description> 2.0`,
  `USER <scenario> <user> START|END <start> <end>`,
  `REQUEST <scenario> <user> <groups> <name> <start> <end> OK|KO <message> [<extra info>...]`;
- 3.0 to 3.3: `RUN <class> <id> <start> <description> <Gatling's version>`,
  `USER <scenario> <user> START|END <start> <end>`, `REQUEST <user> <groups> <name> <start> <end>
  OK|KO <message>`;
- 3.4 to 3.12: the same RUN record, `USER <scenario> START|END <time>`,
  `REQUEST <groups> <name> <start> <end> OK|KO <message>`.
Times are epoch milliseconds. The 2.x logs name their format (2.0) in the RUN record, not the
Gatling version that wrote them. The milestones of 2.2 wrote a layout of their own (the kind
first, four times a request and a RUN record of six fields): it is named, not read."""
from __future__ import annotations

import re
from dataclasses import dataclass

# `\d+\.\d[\w.-]*`: the same as `\d+\.\d+[\w.-]*` without two repetitions that can share digits.
VERSION = re.compile(r"\d+\.\d[\w.-]*")
_MS = re.compile(r"\d{1,20}")
KINDS = ("RUN", "ASSERTION", "USER", "REQUEST", "GROUP", "ERROR")
TEXT_LINES = "Gatling 2.0 to 3.12"  # the versions whose simulation.log is text


@dataclass(frozen=True)
class Layout:
    """Where each field of a record is, counted from 0 over the line split at its tabs."""

    name: str  # the Gatling versions that write it
    kind_at: int  # the column of the record's kind
    user_fields: int
    user_event: int  # START or END
    request_fields: int  # without Gatling 2's extra info columns
    start: int  # the request's start
    end: int  # the end of its response
    status: int  # OK or KO; the message follows
    extra_info: bool  # Gatling 2 may append the simulation's own columns to a REQUEST record
    names_version: bool  # the RUN record names the Gatling version, not only the log's format

    @property
    def unread_times(self) -> bool:
        """Gatling 2.0 and 2.1 log when the request was sent whole and when the response began."""
        return self.end - self.start > 1


G2_0 = Layout("Gatling 2.0 or 2.1", 2, 6, 3, 11, 5, 8, 9, True, False)
G2_2 = Layout("Gatling 2.2 or 2.3", 0, 6, 3, 9, 5, 6, 7, True, False)
G3_0 = Layout("Gatling 3.0 to 3.3", 0, 6, 3, 8, 4, 5, 6, False, True)
G3_4 = Layout("Gatling 3.4 to 3.12", 0, 4, 2, 7, 3, 4, 5, False, True)


@dataclass(frozen=True)
class Run:
    """A RUN record: the layout of the records after it, the version it names, its start."""

    layout: Layout
    version: str
    start_ms: int


def run_record(fields: list[str]) -> Run | str | None:
    """The RUN record these fields are, in any layout; a str: a RUN record of a layout that is
    not read, said in a phrase; None: not a RUN record."""
    if len(fields) == 6 and fields[2] == "RUN" and fields[0] != "RUN":
        start, version, layout = fields[3], fields[5], G2_0
    elif fields[0] != "RUN":
        return None
    elif len(fields) == 7:
        start, version, layout = fields[4], fields[6], G2_2
    elif len(fields) == 6:
        start, version = fields[3], fields[5]
        major_minor = tuple(int(n) for n in re.findall(r"\d+", version)[:2]) if VERSION.fullmatch(version) else ()
        if major_minor[:1] == (2,):
            return "the RUN record of Gatling 2.2's milestones (six fields, the log format 2.0)"
        layout = G3_0 if (3, 0) <= major_minor < (3, 4) else G3_4
    else:
        return None
    if not (_MS.fullmatch(start) and VERSION.fullmatch(version)):
        return None
    return Run(layout, version, int(start))


def is_text_log(first_line: str) -> bool:
    """Whether a file's first line begins a text simulation.log (of any layout)."""
    fields = first_line.rstrip("\r").split("\t")
    return fields[0] == "ASSERTION" and len(fields) > 1 or isinstance(run_record(fields), Run)


def binary_version(head: bytes | str) -> str | None:
    """The Gatling version that wrote a binary simulation.log (3.13 and later), from its first
    record: the RUN header byte 0, then the version as a 4-byte length and its characters."""
    data = head.encode("latin-1", "replace") if isinstance(head, str) else head
    if len(data) < 8 or data[:1] != b"\x00":
        return None
    size = int.from_bytes(data[1:5], "big")
    version = data[5:5 + size].decode("ascii", "replace") if 0 < size <= 40 else ""
    return version if VERSION.fullmatch(version) else None


def binary_refusal(version: str) -> str:
    """The one line for a binary simulation.log."""
    return (f"Gatling {version}'s binary simulation.log (Gatling 3.13 and later write one), which toolbench "
            f"cannot read: it reads the text simulation.log of {TEXT_LINES}; give the simulation.log of a run of "
            "one of those (`toolbench install gatling` installs 3.10.5)")
