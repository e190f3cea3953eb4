"""Running an engine test on each of its connection paths: the C one (toolbench/engine/_churn*.c,
keep-alive off and on) and the pure-Python one (churn.py and client.py's Conn) that runs where
the extension was not built. A test module makes a fixture of use_path(), parametrized by PATHS."""
from __future__ import annotations

import os

import pytest

from toolbench.engine import churn_native
from toolbench.engine.churn_native import PATH_ENV

PATHS = ["C", "Python"]


def use_path(which: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Makes the engine runs that follow (and the worker processes they start) take path `which`."""
    if which == "Python":
        monkeypatch.setenv(PATH_ENV, "python")
    else:
        monkeypatch.delenv(PATH_ENV, raising=False)
        if churn_native.keepalive_path() != "C":
            # Optional (built by the install where gcc and the Python headers are); CI asks for it.
            if os.environ.get("TOOLBENCH_REQUIRE_C_PATH"):
                pytest.fail("the engine's C path (toolbench.engine._churn) is not built, and TOOLBENCH_REQUIRE_C_PATH "
                            "is set")
            pytest.skip("the engine's C path (toolbench.engine._churn) is not built here")
    assert churn_native.churn_path() == churn_native.keepalive_path() == which
    return which
