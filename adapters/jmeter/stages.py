"""A workload's stages (toolbench.scenario.workload.Stage) as JMeter's stock Thread Group can
run them: its ramp-up (`ramp_time`: its threads started evenly over that many seconds) is the
first stage, from 0 to the peak users, and its scheduler's duration the stages' sum; every thread
then runs to the end. A stage that lowers the users is not run as such (the Thread Group stops
all its threads together, at its end), and a second rise cannot be expressed.

Why not several Thread Groups, each a slice of the users with a delay and a duration of its own
(a ramp-down as groups ending one after the other): their delays, durations and ramps are whole
seconds, and one group ends all its threads at once, so a ramp down of n users takes n groups
and is still cut to whole seconds, while a ramp-up spread over several groups is no longer one
even ramp; toolbench keeps the one group and says what it does not run."""
from __future__ import annotations

from toolbench.scenario.workload import Workload

HOW = ("the Thread Group's ramp-up (ramp_time, whole seconds) is the first stage, from 0 to the peak users, "
       "and its scheduler runs every user to the end of the last stage: a ramp down is not run, the users stop "
       "together at the end")


def refusal(workload: Workload) -> str | None:
    """Why JMeter's one Thread Group cannot run these stages; None when it can (approximated)."""
    stages = workload.stages
    if not stages:
        return None
    if stages[0].users is None:
        return "JMeter's Thread Group runs a closed model (threads): stages of a request rate are not run"
    peak = workload.peak_users
    if stages[0].users != peak:
        return (f"JMeter's Thread Group ramps up once, from 0 to its threads: the first stage reaches "
                f"{stages[0].users} users, the peak is {peak}")
    levels = [s.users or 0 for s in stages]
    if any(later > earlier for earlier, later in zip(levels, levels[1:])):
        return "JMeter's Thread Group ramps up once: a stage that raises the users after a lower one is not run"
    return None


def ramp_s(workload: Workload) -> int:
    """The Thread Group's ramp_time: the first stage's length in whole seconds (0 without stages)."""
    return round(workload.stages[0].duration_s) if workload.stages else 0
