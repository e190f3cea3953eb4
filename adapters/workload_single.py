"""What of a workload (toolbench.scenario.workload) a tool that sends one request can express:
nothing but that request, each feature unsupported with the tool's own reason. Each such adapter
declares its `workload_features` from here, naming what it sends and what it has instead."""
from __future__ import annotations

from typing import Mapping

from toolbench.contract.workload import FeatureSupport, unsupported
from toolbench.scenario.workload import FEATURES


def one_request(sends: str, **instead: str) -> Mapping[str, FeatureSupport]:
    """Every feature unsupported: `sends` says what the tool sends ("ab sends one URL with one
    method and body"), `instead` a feature's own reason where the tool has something near it."""
    reasons = {
        "sequence": sends,
        "mix": sends,
        "data": f"{sends}: no variables to fill from a data file",
        "extract": f"{sends}: it reads nothing from a response to send later",
        "think": f"{sends}, each connection's next as soon as the last is answered: no pause",
        "checks": f"{sends} and judges each response by its status only",
        "stages": f"{sends} from all its connections at once, to the end: no stages",
        "per_request": f"{sends}: there are no request names to count by",
    }
    unknown = set(instead) - set(FEATURES)
    assert not unknown, f"not workload features: {sorted(unknown)}"
    return {feature: unsupported(instead.get(feature, reasons[feature])) for feature in FEATURES}
