"""How a scenario is measured, beyond its matrix: where the target's and the generator's
processes run (`placement:`), the order of the cells (`order:`, `seed:`), the settle before each
cell (`settle:`), the machine's reference before and after the run (`calibrate:`), and how much
foreign work makes a cell `disturbed` (`disturbed:`). Parsed once into typed, frozen objects;
what each one does is in docs/measurement.md."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

from toolbench.scenario.yamlread import Node, attempt

PLACEMENT_MODES = ("none", "split")
# What `run` does without a `placement:` key: measured in bench/bench_repeat.py (see
# docs/measurement.md), the split gave the most repeatable figures on a small machine.
DEFAULT_PLACEMENT = "split"
ORDERS = ("shuffled", "as-written")
SIDES = ("target", "generator", "toolbench")
MAX_CPU = 4095  # a CPU number beyond any machine's: a typo, not a placement
MAX_SETTLE_S = 600.0
MAX_SEED = 2**32 - 1
DISTURBED_ENV = "TOOLBENCH_DISTURBED"


@dataclass(frozen=True)
class PlacementSpec:
    """Which CPUs each side's processes get. `mode` "none": wherever the scheduler puts them;
    "split": the CPUs of a machine that runs both sides are halved between them (each side gets
    every CPU of a machine of its own); "explicit": the lists given, each None for "every CPU"."""

    mode: str = DEFAULT_PLACEMENT
    target: tuple[int, ...] | None = None
    generator: tuple[int, ...] | None = None
    toolbench: tuple[int, ...] | None = None  # the runner, its probe and monitor; None: with the generator

    @property
    def label(self) -> str:
        if self.mode != "explicit":
            return self.mode
        lists = {side: getattr(self, side) for side in SIDES}
        return ", ".join(f"{side} {cpu_list(cpus)}" for side, cpus in lists.items() if cpus is not None)


@dataclass(frozen=True)
class MethodSpec:
    """The method of a run: see the module's docstring."""

    order: str = "shuffled"  # one of ORDERS: each repetition's cells in a seeded random order
    seed: int | None = None  # None: drawn when the run starts, and recorded
    settle_max_s: float = 10.0  # the longest wait for the previous cell's connections to close; 0: none
    # Unmeasured load on each target before its first cell (`warm_target`): off unless asked, since
    # here it removed no first-repetition effect that placement had not (docs/measurement.md); the
    # bundled comparisons ask for it, as a cold target's first cell is a risk worth 2 s on any machine.
    target_warmup_s: float = 0.0
    calibrate: bool = True
    # A cell in which processes that are neither the target's, the tool's nor toolbench's took more
    # than this share of one core (or the hypervisor stole as much) is `disturbed`; None: not judged.
    foreign_cpu_pct: float | None = 5.0
    steal_pct: float | None = 10.0  # below it no effect on a cell was measurable here: docs/measurement.md


def cpu_list(cpus: tuple[int, ...]) -> str:
    """0,1,2,5 -> "0-2,5", as taskset and cpusets write it."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def parse_cpu_list(node: Node) -> tuple[int, ...]:
    """`"0-2,5"`, `3` or `[0, 1]`: the CPUs, sorted, each once."""
    if node.is_sequence():
        parts = [str(child.scalar()) for child in node.elements()]
    else:
        parts = str(node.scalar()).split(",")
    cpus: set[int] = set()
    for part in (p.strip() for p in parts):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise node.error(f"expected a CPU list such as 0-1,3, got {part!r}")
        first, last = int(low), int(high or low)
        if last < first or last > MAX_CPU:
            raise node.error(f"expected CPUs from 0 to {MAX_CPU}, in order, got {part!r}")
        cpus.update(range(first, last + 1))
    if not cpus:
        raise node.error("expected at least one CPU")
    return tuple(sorted(cpus))


def parse_placement(node: Node, locations: dict[str, str] | None = None) -> PlacementSpec:
    """`locations` gets file:line of each side's list, for a CPU the host turns out not to have."""
    if not node.is_mapping():
        return PlacementSpec(mode=node.choice(PLACEMENT_MODES))
    keys = node.items(SIDES)
    if not keys:
        raise node.error(f"expected `none`, `split`, or CPU lists for some of: {', '.join(SIDES)}")
    if locations is not None:
        locations.update({child.path: f"{child.file}:{child.line}" for child in keys.values()})
    lists = {side: parse_cpu_list(child) for side, child in keys.items()}
    if "target" in lists and "generator" in lists and set(lists["target"]) & set(lists["generator"]):
        shared = cpu_list(tuple(set(lists["target"]) & set(lists["generator"])))
        raise node.error(f"the target and the generator share CPUs {shared}: give them disjoint lists, "
                         "or `placement: none`")
    return PlacementSpec(mode="explicit", **lists)


METHOD_KEYS = ("order", "seed", "settle", "warm_target", "calibrate", "disturbed")


def parse_method(keys: dict[str, Node]) -> MethodSpec:
    """The method's top-level keys of a scenario (those of METHOD_KEYS present in `keys`); each
    is read on its own, so that every bad one is reported, not only the first."""
    d = MethodSpec()

    def key(name: str, read: Callable[[Node], Any], default: Any) -> Any:
        return attempt(lambda: read(keys[name]), default) if name in keys else default

    foreign, steal = key("disturbed", _limits, _default_limits(d))
    return MethodSpec(
        order=key("order", lambda node: node.choice(ORDERS), d.order),
        seed=key("seed", _seed, None),
        settle_max_s=key("settle", _settle, d.settle_max_s),
        target_warmup_s=key("warm_target", _settle, d.target_warmup_s),
        calibrate=key("calibrate", Node.boolean, d.calibrate),
        foreign_cpu_pct=foreign,
        steal_pct=steal,
    )


def _limits(node: Node) -> tuple[float | None, float | None]:
    """`disturbed: {foreign_cpu: 5%, steal: 20%}`, or `none` (no cell is judged)."""
    if node.is_null() or (not node.is_mapping() and node.scalar() == "none"):
        return None, None
    d = MethodSpec()
    limits = node.items(("foreign_cpu", "steal"))
    return (attempt(lambda: _percent(limits["foreign_cpu"]), d.foreign_cpu_pct) if "foreign_cpu" in limits
            else d.foreign_cpu_pct,
            attempt(lambda: _percent(limits["steal"]), d.steal_pct) if "steal" in limits else d.steal_pct)


def _seed(node: Node) -> int:
    value = node.scalar()
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise node.error(f"expected a seed from 0 to {MAX_SEED}, got {value!r}")
    return value


def _default_limits(d: MethodSpec) -> tuple[float | None, float | None]:
    """The limits of a scenario that does not give `disturbed:`. DISTURBED_ENV=off turns them off
    for such scenarios: the test suite sets it, as its runs share the machine with whatever else
    CI runs, and only the tests about disturbance (which give `disturbed:`) judge the machine."""
    if os.environ.get(DISTURBED_ENV, "").strip().lower() == "off":
        return None, None
    return d.foreign_cpu_pct, d.steal_pct


def _settle(node: Node) -> float:
    """`settle: 10s` or `warm_target: 2s` (a bounded duration), or `none`."""
    if node.is_null() or node.scalar() == "none":
        return 0.0
    value = node.duration_s()
    if not 0 <= value <= MAX_SETTLE_S:
        raise node.error(f"expected a duration from 0 to {MAX_SETTLE_S:g}s, or none, got {node.scalar()!r}")
    return value


def _percent(node: Node) -> float:
    """`5%` or `5`: a share of one core, in percent."""
    raw = node.scalar()
    text = str(raw).strip()
    try:
        value = float(text[:-1] if text.endswith("%") else text)
    except ValueError:
        raise node.error(f"expected a percentage such as 5%, got {raw!r}") from None
    if not 0 < value <= 100 * (MAX_CPU + 1) or value != value:
        raise node.error(f"expected a positive percentage of one core, got {raw!r}")
    return value
