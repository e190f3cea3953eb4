"""Several test runs in one JTL: JMeter appends to the file `-l` names (to an XML one too: it
takes off the closing `</testResults>` and writes on), so a JTL kept between runs holds each of
them, days or weeks apart. They are told apart by silence.

The gap rule: a new run starts where no sample was running for more than
max(MIN_GAP_S, GAP_FACTOR x the longest sample's elapsed time). Within one run the
threads keep samples going, and a pause between them is a timer or think time, which
load plans keep well under ten minutes; a silence of ten times the slowest sample is no
straggler still waiting on its response either. Two runs started a few minutes apart are
then one, which is the safe side: they are read as one run, as before."""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from toolbench.adapters.jmeter.agg import Aggregate, Batch, Jtl, check_columns
from toolbench.errors import ParseError

MIN_GAP_S = 600
GAP_FACTOR = 10


class _Seconds(Aggregate):
    """Only the seconds in which samples start, each with the last second one of them ends in."""

    def __init__(self) -> None:
        super().__init__()
        self.starts = np.zeros(0, np.int64)
        self.ends = np.zeros(0, np.int64)
        self.longest_ms = 0

    def add(self, b: Batch) -> None:
        if not len(b.ts_ms):
            return
        try:
            check_columns(b)
        except ValueError as exc:
            raise ParseError("jmeter", str(exc)) from None
        self.rows += len(b.ts_ms)
        self.longest_ms = max(self.longest_ms, int(b.elapsed_ms.max()))
        starts = np.concatenate([self.starts, b.ts_ms // 1000])
        ends = np.concatenate([self.ends, (b.ts_ms + b.elapsed_ms) // 1000])
        self.starts, inverse = np.unique(starts, return_inverse=True)
        self.ends = np.zeros(len(self.starts), np.int64)
        np.maximum.at(self.ends, inverse, ends)


def run_windows(path: Path) -> list[tuple[int, int]]:
    """The runs of the JTL at `path`, each as the epoch-ms window its samples start in
    (lo included, hi not); one window when the file holds one run."""
    stat = path.stat()
    return list(_windows(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=8)  # parse reads one run at a time: the file is scanned once, not once per run
def _windows(path: str, _mtime_ns: int, _size: int) -> tuple[tuple[int, int], ...]:
    from toolbench.adapters.jmeter.reader import read_jtl

    seconds = _Seconds()
    read_jtl(Path(path), seconds)
    gap_s = max(MIN_GAP_S, GAP_FACTOR * seconds.longest_ms / 1000)
    running_to = np.maximum.accumulate(seconds.ends)
    new_run = np.flatnonzero(seconds.starts[1:] - running_to[:-1] > gap_s) + 1
    cuts = [int(seconds.starts[i]) * 1000 for i in new_run]
    bounds = [0, *cuts, 2**63 - 1]
    return tuple(zip(bounds[:-1], bounds[1:]))


def is_xml(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<")


def count_runs(path: Path) -> int:
    """How many runs the JTL holds."""
    return len(run_windows(path))


def read_run(path: Path, n: int) -> tuple[Jtl, int]:
    """Run `n` (1: the first) of a JTL, with what reading the file noted, and how many
    runs it holds."""
    from toolbench.adapters.jmeter.reader import read_jtl

    windows = run_windows(path)
    if not 1 <= n <= len(windows):
        raise ParseError("jmeter", f"the JTL holds {len(windows)} runs, not a run {n}", str(path))
    agg = Aggregate()
    agg.window = windows[n - 1]
    return read_jtl(path, agg), len(windows)


def read_merged(path: Path) -> tuple[Jtl, list[float]]:
    """Every run of a JTL together (without a per-second series), and each run's duration."""
    runs = [read_run(path, n)[0] for n in range(1, len(run_windows(path)) + 1)]
    durations = [jtl.aggregate.duration_s() or 0.0 for jtl in runs]
    for jtl in runs[1:]:
        runs[0].aggregate.merge(jtl.aggregate, series=False)
    return runs[0], durations
