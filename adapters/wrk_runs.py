"""The runs one wrk (or wrk2) output holds: people append run after run to one file
(`wrk ... >> results.txt`), often with an `echo` heading before each, or a command line,
or back to back; with `2>&1`, wrk's own error lines (`unable to connect to ...`) land
between them. Each run is read alone (Adapter.parts), or all merged (--merge-runs): never
figures of one run with those of another.

A run starts at wrk's `Running 10s test @ URL` line and ends with its `Transfer/sec:` line
(or where the next run starts). What lies between two runs is the heading of the next:
its last line, when it is a few plain words, names the run."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from toolbench.adapters.wrk_text import ERROR_KINDS, Summary
from toolbench.record.schema import Latency
from toolbench.scenario import names

_RUNNING = re.compile(r"Running \S+ test @ \S+\s*$")
_END = "Transfer/sec:"
_REQUESTS = re.compile(r"\s*\d+ requests in ")
# What wrk (and wrk2) print on stderr before giving up on a run (src/wrk.c, main and parse_args).
WRK_ERRORS = ("unable to connect to ", "unable to create thread", "invalid URL:",
              "number of connections must be >= threads", "Throughput MUST be specified")
_DECORATION = "=#*-~:>[]() \t"
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9 _.-]*")
_MAX_HEADING = 48  # a longer line is a note, not a heading


@dataclass
class Run:
    name: str
    text: str  # from its Running line to the end of its summary
    heading: str | None = None
    notes: list[str] = field(default_factory=list)  # what the output holds beside it, unread


def split(stdout: str) -> list[Run]:
    """The runs of `stdout` that printed a summary, in order, each with a name (run1, run2...,
    or from the headings when every run has its own). Lines that belong to no run are noted
    in the next run (the last, after it): wrk's error lines, and runs that printed no summary."""
    runs: list[Run] = []
    gap: list[str] = []  # lines since the last run ended
    current: list[str] | None = None
    pending: list[str] = []  # notes for the next run
    for line in stdout.split("\n"):
        if _RUNNING.match(line):
            if current is not None:
                _close(current, runs, pending)
            heading, strays = _between(gap)
            pending += strays
            current, gap = [line], []
            runs.append(Run("", "", heading))  # its text when it closes; a run without summary is dropped then
        elif current is not None:
            current.append(line)
            if line.startswith(_END):
                _close(current, runs, pending)
                current = None
        else:
            gap.append(line)
    if current is not None:
        _close(current, runs, pending)
    pending += _between(gap)[1]
    runs = [run for run in runs if run.text]
    if runs and pending:
        runs[-1].notes += pending
    for run in runs:
        run.notes = compact(run.notes)
    _name(runs)
    return runs


def listed(runs: list[Run], most: int = 6) -> str:
    """The runs' names, for a message: the first few of many."""
    shown = ", ".join(run.name for run in runs[:most])
    return shown + (f" and {len(runs) - most} more" if len(runs) > most else "")


def compact(notes: list[str], most: int = 4) -> list[str]:
    """Notes of what lies between runs, the first few of many (a file of a thousand failed starts)."""
    return notes if len(notes) <= most else [*notes[:most - 1], f"and {len(notes) - most + 1} more such lines"]


def strays(stdout: str) -> list[str]:
    """wrk's error lines in an output that holds no run: what it said, merged into the file."""
    return [line.strip() for line in stdout.split("\n") if line.startswith(WRK_ERRORS)]


def _close(lines: list[str], runs: list[Run], pending: list[str]) -> None:
    run = runs[-1]
    if any(_REQUESTS.match(line) for line in lines):
        run.text = "\n".join(lines)
        run.notes, pending[:] = list(pending), []
    else:
        pending.append(f"the output also holds a run that printed no summary ({lines[0].strip()[:120]}): not read")


def _between(gap: list[str]) -> tuple[str | None, list[str]]:
    """The heading of the run after `gap` (its last line that is not wrk's), and notes of what
    else it holds that is wrk's: its error lines, each a run that got nowhere."""
    notes = [f"the output also holds wrk's error line {line.strip()[:160]!r}, from a run without a summary"
             for line in gap if line.startswith(WRK_ERRORS)]
    others = [line for line in gap if line.strip() and not line.startswith(WRK_ERRORS)]
    return (others[-1] if others else None), notes


def heading_name(line: str | None) -> str | None:
    """A heading of a few plain words as a run's name (`== nginx keep-alive ==` ->
    nginx-keep-alive); None for anything else (a command line, a date, a script's output)."""
    if line is None or len(line) > 2 * _MAX_HEADING or line[:1].isspace():
        return None
    words = line.strip(_DECORATION)
    if not words or len(words) > _MAX_HEADING or not _PLAIN.fullmatch(words):
        return None
    name = "-".join(words.lower().split())
    return None if names.problem(name) or name == "all" else name


def _name(runs: list[Run]) -> None:
    named = [heading_name(run.heading) for run in runs]
    if all(named) and len(set(named)) == len(named):
        for run, name in zip(runs, named):
            run.name = name or ""
    else:
        for n, run in enumerate(runs, 1):
            run.name = f"run{n}"


def merge(summaries: list[Summary], labels: list[str]) -> Summary:
    """The runs as one: counts, bytes and durations summed; latency only as far as it combines
    (the mean weighted by the requests each run timed, the extremes); no percentile."""
    first = summaries[0]
    merged = Summary(requests=sum(s.requests for s in summaries),
                     duration_s=round(sum(s.duration_s for s in summaries), 6),
                     errors={kind: sum(s.errors[kind] for s in summaries) for kind in ERROR_KINDS},
                     status=sum(s.status for s in summaries),
                     bytes=_total([s.bytes for s in summaries]),
                     wrk2=all(s.wrk2 for s in summaries),
                     url=first.url if all(s.url == first.url for s in summaries) else None,
                     connections=first.connections if all(s.connections == first.connections
                                                          for s in summaries) else None)
    weights = [s.recorded if s.recorded is not None else s.requests for s in summaries]
    merged.latency = _latency([s.latency for s in summaries], weights)
    if all(s.uncorrected is not None for s in summaries):
        merged.uncorrected = _latency([s.uncorrected or Latency() for s in summaries], weights)
    merged.recorded = _total([s.recorded for s in summaries])
    shown = ", ".join(labels[:6]) + (f" and {len(labels) - 6} more" if len(labels) > 6 else "")
    durations = " + ".join(f"{s.duration_s:g} s" for s in summaries[:6]) + (" + ..." if len(summaries) > 6 else "")
    merged.notes.append(f"{len(summaries)} runs merged ({shown}): counts and bytes summed, durations "
                        f"added ({durations}); latency: the mean weighted by the requests each run timed and the "
                        "extremes; no percentile or stdev, as those of separate runs do not combine")
    merged.notes += compact(_part_notes(summaries, labels), most=8)
    if any(s.wrk2 for s in summaries) and not merged.wrk2:
        merged.notes.append("some runs are wrk2's (latency from the intended send) and some wrk's: their latency is "
                            "not merged")
        merged.latency, merged.uncorrected = Latency(), None
    if merged.url is None and any(s.url for s in summaries):
        merged.notes.append("the runs were against different URLs")
    return merged


def _part_notes(summaries: list[Summary], labels: list[str]) -> list[str]:
    """The runs' own notes: once where every run has it, else with the run it is about."""
    shared = [note for note in summaries[0].notes if all(note in s.notes for s in summaries)]
    own = [f"{label}: {note}" for s, label in zip(summaries, labels) for note in s.notes if note not in shared]
    return shared + own


def _latency(parts: list[Latency], weights: list[int]) -> Latency:
    means = [p.mean_ms for p in parts]
    mean = None
    if all(m is not None for m in means) and sum(weights):
        mean = sum((m or 0.0) * w for m, w in zip(means, weights)) / sum(weights)
    lows = [p.min_ms for p in parts]
    highs = [p.max_ms for p in parts]
    steps = [p.resolution_ms for p in parts if p.resolution_ms is not None]
    return Latency(min_ms=min(v for v in lows if v is not None) if all(v is not None for v in lows) else None,
                   mean_ms=mean,
                   max_ms=max(v for v in highs if v is not None) if all(v is not None for v in highs) else None,
                   resolution_ms=max(steps) if steps else None)


def _total(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)
