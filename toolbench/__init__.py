"""toolbench: a load-tool meta-benchmark and result normalizer.

Its packages are its layers, each importing only those before it (docs/architecture.md):
errors (here) -> record -> scenario -> contract -> hosts, engine -> adapters (toolbench.adapters),
servers -> run -> install, report, export -> cli. `load()` below is the public entry for analysis."""
from __future__ import annotations

from typing import TYPE_CHECKING

# The one place the version is written (pyproject.toml reads it): a run records it, and
# asking the installed metadata for it cost an engine run 30-50 ms of CPU.
__version__ = "0.1.0"

if TYPE_CHECKING:
    from pathlib import Path

    import pandas

def load(*paths: "str | Path", series: bool = False, histograms: bool = False) -> "pandas.DataFrame":
    """Stored runs as one pandas DataFrame, one row per result: each path a run folder or a
    folder of runs. `series` adds each result's per-second samples, `histograms` its HDR
    histograms (see toolbench.export.rows.load)."""
    from toolbench.export.rows import load as load_rows

    return load_rows(*paths, series=series, histograms=histograms)
