"""What limited each cell: the server, the load generator, both, or neither.

Server-bound: toolbench's probe, timed during the load, slowed far beyond its unloaded
time (the probe's own `server_bound` judgement), or the server's CPU was saturated.
Generator-bound: the tool's process tree used what it can use, which depends on how the
tool is built (each adapter's `threads`, toolbench.contract.cores): all the host's cores for a multi-threaded tool, one core for a
single-threaded one, and one core per process for a tool bound by Python's GIL."""
from __future__ import annotations

import enum
import statistics
from dataclasses import dataclass
from typing import Any

from toolbench.contract.adapter import Threads
from toolbench.contract.cores import GENERATOR_BOUND_SHARE, threads_of, usable_cores
from toolbench.record.schema import RunResult
from toolbench.report import fmt
from toolbench.report.groups import Point

# Of the server's workers' CPU, the share that counts as saturated.
SERVER_BOUND_SHARE = 0.90


class Bound(str, enum.Enum):
    SERVER = "server"
    GENERATOR = "generator"
    BOTH = "server and generator"
    NEITHER = "neither"
    UNKNOWN = "not measured"

    @property
    def server(self) -> bool:
        return self in (Bound.SERVER, Bound.BOTH)


@dataclass(frozen=True)
class Limit:
    bound: Bound
    why: str  # the evidence, in words: "probe 9.8× its unloaded time; 97 % of its one core"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _generator(point: Point, host_cores: int | None) -> tuple[bool | None, str]:
    costs = [r.cost for r in point.ok if r.cost is not None and r.cost.cpu_mean_pct is not None]
    if not costs:
        return None, ""
    cpu = _median([c.cpu_mean_pct for c in costs if c.cpu_mean_pct is not None]) or 0.0
    processes = max((c.processes_peak or 1) for c in costs)
    tool = point.results[0].identity.tool
    cores = usable_cores(tool, processes, host_cores)
    if cores is None:
        return None, ""
    share = cpu / (cores * 100.0)
    model = threads_of(tool)
    what = {Threads.ONE: "its one core (one thread)", Threads.PER_PROCESS: f"{fmt.number(cores)} core(s), "
            "one per process", Threads.ALL: f"the host's {fmt.number(cores)} cores"}[model]
    return share >= GENERATOR_BOUND_SHARE, f"{tool} used {share * 100:.0f} % of {what}"


def server_cpu(result: RunResult) -> tuple[float | None, float | None]:
    """The server's CPU µs per request and its mean CPU % over its workers' capacity, from
    `result.server_cost` where the run measured it (read defensively: older records lack it)."""
    cost: Any = getattr(result, "server_cost", None)
    if cost is None:
        return None, None
    per_request = getattr(cost, "cpu_us_per_request", None)
    pct, workers = getattr(cost, "cpu_mean_pct", None), getattr(cost, "workers", None)
    share = pct / (100.0 * workers) if pct is not None and workers else None
    return per_request, share


def _server(point: Point) -> tuple[bool | None, str]:
    flags = [r.probe.server_bound for r in point.ok if r.probe is not None and r.probe.server_bound is not None]
    slow = _median([r.probe.slowdown for r in point.ok if r.probe is not None and r.probe.slowdown is not None])
    shares = [s for r in point.ok if (s := server_cpu(r)[1]) is not None]
    saturated = bool(shares) and statistics.median(shares) >= SERVER_BOUND_SHARE
    probe_bound = bool(flags) and sum(flags) * 2 >= len(flags)  # half the repetitions or more
    why = []
    if probe_bound:
        why.append(f"probe {slow:.1f}× its unloaded time" if slow is not None else "probe far above its unloaded time")
    if saturated:
        why.append(f"server CPU at {statistics.median(shares) * 100:.0f} % of its workers")
    if not flags and not shares:
        return None, ""
    return probe_bound or saturated, "; ".join(why) or (
        f"probe {slow:.1f}× its unloaded time" if slow is not None else "probe near its unloaded time")


def limit_of(point: Point, host_cores: int | None) -> Limit:
    server, server_why = _server(point)
    generator, generator_why = _generator(point, host_cores)
    if server is None and generator is None:
        return Limit(Bound.UNKNOWN, "no probe and no monitor data")
    if server is None:
        server_why = "the server's side not measured (no probe answer, no server CPU)"
    if generator is None:
        generator_why = "the generator's side not measured (no monitor)"
    # Neither only when both sides were seen to have room; one side unseen is not known.
    bound = {(True, True): Bound.BOTH, (True, False): Bound.SERVER, (True, None): Bound.SERVER,
             (False, True): Bound.GENERATOR, (None, True): Bound.GENERATOR,
             (False, False): Bound.NEITHER}.get((server, generator), Bound.UNKNOWN)
    return Limit(bound, "; ".join(w for w in (server_why, generator_why) if w))
