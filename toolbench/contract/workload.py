"""What an adapter can do with a workload (toolbench.scenario.workload): each feature honoured,
approximated (with how), or unsupported (with the exact reason), declared by the adapter and shown
by the plan before anything runs. A cell whose workload asks for a feature its tool cannot
express is planned unsupported with that reason; an approximated one runs, with a note."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Mapping

from toolbench.scenario.workload import FEATURE_TEXT, FEATURES, Workload


class Level(str, enum.Enum):
    HONOURED = "honoured"
    APPROXIMATED = "approximated"
    UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class FeatureSupport:
    level: Level
    how: str = ""  # approximated: how; unsupported: why (one clause, no trailing period)


def honoured() -> FeatureSupport:
    return FeatureSupport(Level.HONOURED)


def approximated(how: str) -> FeatureSupport:
    return FeatureSupport(Level.APPROXIMATED, how)


def unsupported(why: str) -> FeatureSupport:
    return FeatureSupport(Level.UNSUPPORTED, why)


def support_for(declared: Mapping[str, FeatureSupport], tool: str, workload: Workload) -> dict[str, FeatureSupport]:
    """Each feature the workload asks for, as the adapter declared it; one it did not declare is
    unsupported, because toolbench has no translation of it for this tool."""
    return support_of(declared, tool, workload.features())


def support_of(declared: Mapping[str, FeatureSupport], tool: str,
               features: frozenset[str] = frozenset(FEATURES)) -> dict[str, FeatureSupport]:
    """Each of `features` (by default every one), in FEATURES' order, as the adapter declared it."""
    return {feature: declared.get(feature) or unsupported(f"toolbench does not translate {FEATURE_TEXT[feature]} for {tool}")
            for feature in FEATURES if feature in features}
