"""The scenario's `probe:` and `monitor:` sections: what toolbench observes beside the tool
(its own timed requests, toolbench.run.probe; the generator's resources, toolbench.hosts.monitor),
parsed into typed, frozen objects."""
from __future__ import annotations

from dataclasses import dataclass

from toolbench.scenario.yamlread import Node


@dataclass(frozen=True)
class ProbeSpec:
    """The independent requests toolbench times itself (see toolbench.run.probe)."""

    enabled: bool = True
    interval_s: float = 1.0
    baseline_requests: int = 20
    timeout_s: float = 5.0
    slowdown_factor: float = 3.0  # probe median over its baseline that means "the server slowed down"
    slowdown_floor_ms: float = 1.0  # ... and by at least this much
    tolerance: float = 3.0  # tool vs probe: the larger over the smaller
    tolerance_ms: float = 1.0  # ... and at least this far apart


@dataclass(frozen=True)
class MonitorSpec:
    enabled: bool = True
    interval_s: float = 1.0


MAX_BASELINE = 10_000  # the probe's requests before the load: more only delays every cell
PROBE_KEYS = ("interval", "baseline", "timeout", "slowdown", "slowdown_floor", "tolerance", "tolerance_floor",
              "enabled")
MONITOR_KEYS = ("interval", "enabled")


def parse_probe(node: Node) -> ProbeSpec:
    keys = node.items(PROBE_KEYS)
    d = ProbeSpec()

    def at_least_one(name: str, default: float) -> float:
        if name not in keys:
            return default
        value = keys[name].number()
        if value < 1:
            raise keys[name].error(f"expected a factor of at least 1, got {value:g}")
        return value

    return ProbeSpec(
        enabled=keys["enabled"].boolean() if "enabled" in keys else True,
        interval_s=_positive_duration(keys, "interval", d.interval_s),
        baseline_requests=keys["baseline"].positive_int(MAX_BASELINE) if "baseline" in keys else d.baseline_requests,
        timeout_s=_positive_duration(keys, "timeout", d.timeout_s),
        slowdown_factor=at_least_one("slowdown", d.slowdown_factor),
        slowdown_floor_ms=keys["slowdown_floor"].duration_s() * 1000 if "slowdown_floor" in keys
        else d.slowdown_floor_ms,
        tolerance=at_least_one("tolerance", d.tolerance),
        tolerance_ms=keys["tolerance_floor"].duration_s() * 1000 if "tolerance_floor" in keys else d.tolerance_ms,
    )


def parse_monitor(node: Node) -> MonitorSpec:
    keys = node.items(MONITOR_KEYS)
    return MonitorSpec(enabled=keys["enabled"].boolean() if "enabled" in keys else True,
                       interval_s=_positive_duration(keys, "interval", MonitorSpec().interval_s))


def _positive_duration(keys: dict[str, Node], name: str, default: float) -> float:
    if name not in keys:
        return default
    value = keys[name].duration_s()
    if value <= 0:
        raise keys[name].error("expected a positive duration")
    return value
