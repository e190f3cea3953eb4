"""The tools that send one request declare, feature by feature, why they cannot express a workload
(issue 32): the plan shows their own reason, not toolbench's default."""
from __future__ import annotations

import pytest

from toolbench.contract import registry
from toolbench.contract.workload import Level, support_for
from toolbench.scenario.workload import FEATURE_TEXT, FEATURES, Checks, Stage, ThinkTime, Workload, WorkloadRequest

TOOLS = ("ab", "hey", "h2load", "bombardier", "oha", "http_load", "k6")  # httperf: its session file (test_httperf_workload)
EVERYTHING = Workload("sequence", (WorkloadRequest("a", checks=Checks(status=(200,))), WorkloadRequest("b")),
                      think=ThinkTime(0.1, 0.1), stages=(Stage(1.0, users=2),))


@pytest.mark.parametrize("tool", TOOLS)
def test_every_feature_is_declared_unsupported_with_the_tools_own_reason(tool: str):
    adapter = registry.get(tool)
    assert set(adapter.workload_features) == set(FEATURES)
    support = support_for(adapter.workload_features, tool, EVERYTHING)
    assert support and all(s.level is Level.UNSUPPORTED for s in support.values())
    defaults = {f"toolbench does not translate {FEATURE_TEXT[f]} for {tool}" for f in FEATURES}
    assert not {s.how for s in support.values()} & defaults, "the default reason, not the tool's own"


def test_the_reasons_name_what_the_tool_has_instead():
    assert "one URL with one method and body" in registry.get("ab").workload_features["mix"].how
    assert "-q" in registry.get("hey").workload_features["think"].how
    assert "read-only" in registry.get("k6").workload_features["checks"].how
