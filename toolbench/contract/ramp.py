"""A tool's ramp: how long it takes from its first request to its steady rate (a JVM's JIT,
Locust's spawn), declared by its adapter (Adapter.ramp_s). No warm-up removes it: the warm-up
is another process of the tool, and the measured cell starts its own JIT and spawn again.

A cell measured over less than RAMP_MULTIPLE times its tool's ramp is flagged. Why 5: a rate
that climbs evenly from nothing to steady over the ramp loses half the ramp at the steady rate,
so under five ramps the cell's rate is understated by more than 10%, more than the run-to-run
spread toolbench sees on a quiet machine."""
from __future__ import annotations

RAMP_MULTIPLE = 5.0


def short_of_ramp(duration_s: float | None, ramp_s: float) -> bool:
    """A cell measured (or asked) over less than RAMP_MULTIPLE times the tool's ramp."""
    return bool(ramp_s) and duration_s is not None and duration_s < RAMP_MULTIPLE * ramp_s


def ramp_note(tool: str, duration_s: float, ramp_s: float, asked: bool = False) -> str:
    what = "asks for" if asked else "measured"
    return (f"the cell {what} {duration_s:.3g}s, under {RAMP_MULTIPLE:g}x {tool}'s {ramp_s:g}s ramp to its "
            f"steady rate: its rate is understated (run it {RAMP_MULTIPLE * ramp_s:g}s or longer)")
