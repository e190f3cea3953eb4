"""Output appended to by run after run (a shell loop's `>> out.txt`): where each run lies in it,
and the run a part names (Adapter.parts, RawOutput.part). Each run is read alone, so that no
result mixes figures of two runs; a tool's runs that are summaries are not merged."""
from __future__ import annotations

import re

from toolbench.contract.adapter import RawOutput
from toolbench.errors import ParseError

Span = tuple[int, int]


def spans(text: str, start: re.Pattern[str]) -> list[Span]:
    """Each run from a line where one starts (`start`) to the next; what precedes the first
    such line belongs to the first run."""
    starts = [m.start() for m in start.finditer(text)][1:]
    return list(zip([0, *starts], [*starts, len(text)]))


def names(found: list[Span]) -> list[str]:
    return [f"run{n}" for n in range(1, len(found) + 1)] if len(found) > 1 else []


def chosen(tool: str, found: list[Span], raw: RawOutput) -> str:
    """The text of the run `raw.part` names; of the only one without a part."""
    if raw.part == "all":
        raise ParseError(tool, f"the runs of this {tool} output cannot be merged: each is one run's summary, "
                         "without the per-request times that would add up; each is read as a result of its own",
                         raw.source)
    index = 0
    if raw.part:
        index = int(raw.part[3:]) - 1 if raw.part.startswith("run") and raw.part[3:].isdigit() else -1
        if not 0 <= index < len(found):
            raise ParseError(tool, f"the output holds {len(found)} runs, not {raw.part}", raw.source)
    elif len(found) > 1:
        raise ParseError(tool, f"the output holds {len(found)} runs: each is read as a result of its own "
                         "(toolbench parse)", raw.source)
    start, end = found[index]
    return raw.stdout[start:end]
