"""Charts as inline SVG text (matplotlib, no network, no files beside the report)."""
from __future__ import annotations

import io
from dataclasses import dataclass

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


@dataclass(frozen=True)
class Line:
    label: str
    xs: list[float]
    ys: list[float]
    dashed: bool = False


def line_chart(lines: list[Line], xlabel: str, ylabel: str, title: str, log_x: bool = False) -> str:
    """Line styles and markers tell series apart, so the chart reads without colour."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    plt.rcParams["svg.hashsalt"] = "toolbench"  # the same data give the same SVG
    fig, ax = plt.subplots(figsize=(7.5, 4.0), dpi=100)
    try:
        for i, line in enumerate(lines):
            ax.plot(line.xs, line.ys, linestyle="--" if line.dashed else "-", marker=MARKERS[i % len(MARKERS)],
                    label=line.label, linewidth=1.6, markersize=5)
        if log_x:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=11)
        ax.grid(True, alpha=0.3)
        if lines:
            ax.legend(fontsize=8, frameon=False)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    finally:
        plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]  # drop the XML prolog and DOCTYPE: the SVG sits inside HTML
