"""toolbench: a load-tool meta-benchmark and result normalizer."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    import pandas


def load(path: "str | Path") -> "pandas.DataFrame":
    """A stored run as a pandas DataFrame, one row per cell (see toolbench.store.load)."""
    from toolbench.store import load as load_run

    return load_run(path)
