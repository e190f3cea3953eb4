"""Whether a tool's latency can be believed: checked against toolbench's own probe
(an independent request timed during the load) and against the tool's own rate
(Little's law: in a closed model, mean latency = connections ÷ rate).

The rules are deliberately coarse and stated in the report: a factor of two, with
the probe's unloaded time and the tool's rounding step as slack."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from toolbench.record.schema import LoadModel, ProbeSummary
from toolbench.report import charts, fmt, groups
from toolbench.report.context import Context
from toolbench.report.view import Figure, Row, Section, Table, Value, columns, num, text

PROBE_RULE = ("agrees: the tool's median (its mean when it gives no median) lands in the range of the probe's "
              "median during the load: within the probe's own tolerance where it recorded a judgement, else "
              "within a factor of two or closer than the probe's unloaded time or the tool's rounding step.")
LITTLE_RULE = ("own rate: in a closed model each connection's cycle lasts concurrency ÷ requests/s (all requests, "
               "failed ones included); a mean latency within 25 % of it (or the tool's rounding step) fits. A mean "
               "below it is time the connections spent outside the timed request (the client's own overhead or "
               "think time), shown as how much; a mean above it means the tool timed more than its connections "
               "could carry, e.g. waiting inside the tool before the send.")


class Verdict(str, enum.Enum):
    AGREES = "agrees"
    LOWER = "tool lower"
    HIGHER = "tool higher"
    SUB_RESOLUTION = "below resolution"
    NO_LATENCY = "no latency reported"
    UNCHECKED = "not checked"


@dataclass(frozen=True)
class Check:
    verdict: Verdict
    ratio: float | None = None  # the tool's value over the reference

    @property
    def text(self) -> str:
        if self.ratio is not None and self.verdict in (Verdict.LOWER, Verdict.HIGHER):
            return f"{self.verdict.value} (×{self.ratio:.2g})"
        return self.verdict.value

    @property
    def bad(self) -> bool:
        return self.verdict in (Verdict.LOWER, Verdict.HIGHER)


@dataclass(frozen=True)
class CellTruth:
    point: groups.Point
    tool_ms: float | None  # the tool's median, else its mean
    mean_ms: float | None
    implied_ms: float | None  # concurrency ÷ rate
    probe_ms: float | None  # the probe's median during the load
    baseline_ms: float | None  # the probe's median with no load
    probe_failures: int | None
    server_bound: bool | None  # the probe slowed down far beyond its baseline: the server was the limit
    by_probe: Check
    by_rate: Check

    @property
    def outside_ms(self) -> float | None:
        """Per request, the time a connection spent outside the timed request: c ÷ rate − mean."""
        if self.by_rate.verdict is not Verdict.LOWER or self.implied_ms is None or self.mean_ms is None:
            return None
        return self.implied_ms - self.mean_ms

    @property
    def rate_text(self) -> str:
        outside = self.outside_ms
        if outside is not None and self.implied_ms:
            return f"{fmt.number(outside)} ms outside the request ({outside / self.implied_ms * 100:.0f} %)"
        return self.by_rate.text


def compare(value: float | None, reference: float | None, resolution: float | None, slack: float,
            factor: float) -> Check:
    if value is None:
        return Check(Verdict.NO_LATENCY)
    if reference is None:
        return Check(Verdict.UNCHECKED)
    if fmt.below_resolution(value, resolution):
        # A rounded-down zero matches anything below one step; it cannot hide more than that.
        return Check(Verdict.SUB_RESOLUTION if reference < (resolution or 0) + slack else Verdict.LOWER)
    tolerance = max(slack, resolution or 0.0)
    if abs(value - reference) <= tolerance or (value > 0 and reference > 0 and
                                               1 / factor <= value / reference <= factor):
        return Check(Verdict.AGREES, value / reference if reference else None)
    ratio = value / reference if reference else None
    return Check(Verdict.LOWER if value < reference else Verdict.HIGHER, ratio)


def _probe_median(probe: ProbeSummary) -> float | None:
    # Fields the probe added to the schema are read with getattr: older records lack them.
    stored = getattr(probe, "p50_ms", None)
    return stored if stored is not None else groups.median(probe.samples_ms)


def _baseline_median(probe: ProbeSummary) -> float | None:
    stored = getattr(probe, "baseline_p50_ms", None)
    return stored if stored is not None else groups.median(probe.baseline_ms)


def _any_flag(probes: list[ProbeSummary], name: str) -> bool | None:
    """True if any repetition's probe raised the flag, False if all looked and none did."""
    flags = [getattr(pr, name, None) for pr in probes]
    return None if all(f is None for f in flags) else any(bool(f) for f in flags)


def _probe_check(tool_ms: float | None, probe_ms: float | None, baseline_ms: float | None,
                 resolution: float | None, disagrees: bool | None) -> Check:
    """The probe's own judgement when it made one; rounding to zero is called out either way."""
    if disagrees is None or tool_ms is None or probe_ms is None or fmt.below_resolution(tool_ms, resolution):
        return compare(tool_ms, probe_ms, resolution, baseline_ms or 0.0, 2.0)
    ratio = tool_ms / probe_ms if probe_ms else None
    if not disagrees:
        return Check(Verdict.AGREES, ratio)
    return Check(Verdict.LOWER if tool_ms < probe_ms else Verdict.HIGHER, ratio)


def cell_truth(p: groups.Point) -> CellTruth:
    res = p.resolution_ms
    p50 = p.median(lambda r: r.measurement.latency.percentiles.p50_ms)
    mean = p.median(lambda r: r.measurement.latency.mean_ms)
    tool_ms = p50 if p50 is not None else mean
    rps = p.attempted  # Little's law counts every request a connection made, failed ones too
    closed = all(r.identity.model is LoadModel.CLOSED for r in p.ok)
    implied = p.concurrency / rps * 1000.0 if closed and rps and p.concurrency else None
    probed = [r.probe for r in p.ok if r.probe is not None]
    probe_ms = groups.median(_probe_median(pr) for pr in probed)
    baseline = groups.median(_baseline_median(pr) for pr in probed)
    return CellTruth(
        point=p, tool_ms=tool_ms, mean_ms=mean, implied_ms=implied, probe_ms=probe_ms, baseline_ms=baseline,
        probe_failures=sum(pr.failures for pr in probed) if probed else None,
        server_bound=_any_flag(probed, "server_bound"),
        by_probe=_probe_check(tool_ms, probe_ms, baseline, res, _any_flag(probed, "tool_disagrees")),
        by_rate=compare(mean, implied, res, 0.0, 1.25))


def truths(ctx: Context) -> list[CellTruth]:
    return [cell_truth(p) for p in ctx.points if p.ok]


def truth_section(ctx: Context) -> Section:
    cells = truths(ctx)
    if not cells:
        return Section("truth", "Tool-reported vs probe latency", absent="No cell finished ok: nothing to check.")
    probed = any(c.probe_ms is not None for c in cells)
    rows = [Row(tuple(_row(ctx, c, probed)), bad=c.by_probe.bad or c.by_rate.verdict is Verdict.HIGHER)
            for c in cells]
    labels = (["run"] if ctx.several else []) + [
        "tool", "keep-alive", "concurrency", ("p50 ms", "the tool's median, else its mean"),
        ("mean ms", "the tool's mean"),
        ("c ÷ rate ms", "each connection's cycle: concurrency ÷ attempted requests/s")]
    if probed:
        labels += [("probe ms", "the probe's median during the load"),
                   ("idle ms", "the probe's median with no load"),
                   ("server", "whether the probe slowed down far beyond its unloaded time: the server was the limit"),
                   ("vs probe", PROBE_RULE)]
    labels.append(("vs rate", LITTLE_RULE))
    table = Table(columns(*labels, numeric_from=3 if ctx.several else 2, text=("server", "vs probe", "vs rate")),
                  tuple(rows), css="results")
    intro = ("toolbench times its own request to the target during each cell (the probe), independently of the "
             "tool. " + PROBE_RULE[0].upper() + PROBE_RULE[1:] + " " + LITTLE_RULE[0].upper() + LITTLE_RULE[1:])
    return Section("truth", "Tool-reported vs probe latency", intro=intro, tables=(table,),
                   figures=(_figure(ctx, cells),) if probed else (), points=_points(cells, probed),
                   details=_findings(cells), details_title="The probe's findings, cell by cell")


def _points(cells: list[CellTruth], probed: bool) -> tuple[str, ...]:
    if not probed and any(r.probe is not None for c in cells for r in c.point.ok):
        return ("The probe ran, but every request it timed during the load failed: the tools' latency is checked "
                "only against their own rate.",) + _failed_probes(cells)
    if not probed:
        return ("No probe ran in this run: the tools' latency is checked only against their own rate.",)
    return _failed_probes(cells)


def _failed_probes(cells: list[CellTruth]) -> tuple[str, ...]:
    return tuple(f"{c.point.key.label}, concurrency {fmt.number(c.point.concurrency)}: {c.probe_failures} probe "
                 "requests failed during the load." for c in cells if c.probe_failures)


def _findings(cells: list[CellTruth]) -> tuple[str, ...]:
    """What the probe itself concluded, cell by cell."""
    return tuple(dict.fromkeys(f"{c.point.key.label}, concurrency {fmt.number(c.point.concurrency)}: {f}."
                               for c in cells for r in c.point.ok if r.probe for f in r.probe.findings))


def _row(ctx: Context, c: CellTruth, probed: bool) -> list[Value]:
    res = c.point.resolution_ms
    values = ([text(c.point.key.run)] if ctx.several else []) + [
        text(c.point.key.name), text(c.point.key.keepalive_text),
        num(fmt.number(c.point.concurrency), c.point.concurrency),
        num(fmt.number(c.tool_ms, res), c.tool_ms, flag=fmt.resolution_flag(c.tool_ms, res)),
        num(fmt.number(c.mean_ms, res), c.mean_ms, flag=fmt.resolution_flag(c.mean_ms, res)),
        num(fmt.number(c.implied_ms), c.implied_ms, derived=c.implied_ms is not None)]
    if probed:
        values += [num(fmt.number(c.probe_ms), c.probe_ms), num(fmt.number(c.baseline_ms), c.baseline_ms),
                   text(fmt.yes_no(c.server_bound, "the limit", "had room")),
                   Value(c.by_probe.text, flag="disagrees" if c.by_probe.bad else "")]
    values.append(Value(c.rate_text, flag="disagrees" if c.by_rate.verdict is Verdict.HIGHER else ""))
    return values


def _figure(ctx: Context, cells: list[CellTruth]) -> Figure:
    panels = []
    for keepalive in (True, False, None):
        lines = []
        for key, pts in groups.by_series([c.point for c in cells if c.point.key.keepalive is keepalive]).items():
            mine = [c for c in cells if c.point.key == key and c.point.concurrency is not None]
            tool = [(float(c.point.concurrency or 0), c.tool_ms) for c in mine if c.tool_ms is not None
                    and not fmt.below_resolution(c.tool_ms, c.point.resolution_ms)]
            probe = [(float(c.point.concurrency or 0), c.probe_ms) for c in mine if c.probe_ms is not None]
            if tool:
                lines.append(charts.Line(f"{key.name} (tool)", [x for x, _ in tool], [y or 0.0 for _, y in tool],
                                         charts.Style(ctx.style(key).index, "-")))
            if probe:
                lines.append(charts.Line(f"{key.name} (probe)", [x for x, _ in probe], [y or 0.0 for _, y in probe],
                                         ctx.style(key, probe=True)))
        if lines:
            panels.append(charts.Panel(f"keep-alive {fmt.yes_no(keepalive)}", lines))
    ys = [y for panel in panels for line in panel.lines for y in line.ys]
    xs = [x for panel in panels for line in panel.lines for x in line.xs]
    axes = charts.Axes("concurrency (connections)", "ms", log_x=charts.wants_log(xs, 8), log_y=charts.wants_log(ys),
                       x_exact=True)
    svg = charts.panels_chart("truth", panels, axes, columns=min(2, len(panels)),
                              alt="Tool-reported median latency and the probe's median latency against concurrency.")
    caption = ("The tool's median latency (solid, filled markers) against the probe's median during the same load "
               "(dotted, hollow markers), one panel per keep-alive setting. A tool's value below its resolution "
               "is left out: it is not a measurement of zero.")
    return Figure(svg, caption, "tool vs probe latency", title="The tool's latency (ms) against the probe's")
