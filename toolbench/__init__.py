"""toolbench: a load-tool meta-benchmark and result normalizer."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    import pandas

def load(*paths: "str | Path", series: bool = False, histograms: bool = False) -> "pandas.DataFrame":
    """Stored runs as one pandas DataFrame, one row per result: each path a run folder or a
    folder of runs. `series` adds each result's per-second samples, `histograms` its HDR
    histograms (see toolbench.rows.load)."""
    from toolbench.rows import load as load_rows

    return load_rows(*paths, series=series, histograms=histograms)
