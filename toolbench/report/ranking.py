"""The like-for-like table: every cell that finished ok, grouped with the cells it may be
compared with, its rank within them, its noise and what limited it. The verdict's
rankings are read from this table's data (toolbench.report.likewise)."""
from __future__ import annotations

from toolbench.record import stats
from toolbench.report import anchors, disturbed, fmt, likewise
from toolbench.report.context import Context
from toolbench.report.perf import noise
from toolbench.report.view import Column, Row, Section, Table, num, text

RULE = (f"Cells are ranked only against cells with the same keep-alive setting, concurrency and variant. A "
        f"difference counts beyond the noise of both cells and beyond {stats.MIN_DIFFERENCE_PCT:g} %; closer cells "
        "share a rank (“1=”). Where the server limited the leading cells, throughput shows the server, so the "
        "cells are ranked by the generator's CPU per request instead (lower first).")


def _rank(comp: likewise.Comparison, cell: likewise.Cell) -> str:
    if len(comp.cells) < 2:
        return "alone"
    order = comp.order(cell.tool)
    if comp.by is likewise.By.NOTHING or order is None:
        return "not ranked"
    tier = comp.ranking[order]
    place = 1 + sum(len(t) for t in comp.ranking[:order])
    return f"{place}=" if len(tier) > 1 else str(place)


def _in_order(comp: likewise.Comparison) -> list[likewise.Cell]:
    """The cells in the order of the ranking used, then those it could not place."""
    ranked = [cell for tier in comp.ranking for cell in tier] if comp.by is not likewise.By.NOTHING else []
    placed = {id(cell) for cell in ranked}
    return ranked + [cell for tier in comp.by_rate for cell in tier if id(cell) not in placed]


def _row(ctx: Context, comp: likewise.Comparison, cell: likewise.Cell, variants: bool) -> Row:
    p = cell.point
    errors = p.error_rate * 100.0 if p.error_rate is not None else None
    cpu = cell.cpu
    values = ([text(p.key.run)] if ctx.several else []) + [
        text(p.key.keepalive_text), num(fmt.number(p.concurrency), p.concurrency)] + (
        [text(p.key.variant)] if variants else []) + [
        text(cell.tool), text(_rank(comp, cell)), text(comp.by.value if len(comp.cells) > 1 else ""),
        num(fmt.number(cell.rate.value), cell.rate.value, derived=p.rps_derived,
            flag=fmt.DISTURBED_LEFT_OUT if disturbed.of(p.results) else ""),
        num(noise(cell.rate), cell.rate.noise_pct), num(fmt.percent(errors), errors),
        num(fmt.number(cpu.value) if cpu else fmt.ABSENT, cpu.value if cpu else None),
        text(cell.limit.bound.value), text(cell.limit.why, "")]
    return Row(tuple(values), anchor=anchors.point(p.key.run, p.key.label, comp.where))


def ranking_section(ctx: Context) -> Section:
    comps = ctx.comparisons
    if not comps:
        return Section("ranking", "Like-for-like ranking", absent="No cell finished ok with a successful rate: "
                       "there is nothing to rank.")
    variants = any(comp.variant for comp in comps)
    rows = [_row(ctx, comp, cell, variants) for comp in comps for cell in _in_order(comp)]
    cols = ([Column("run")] if ctx.several else []) + [
        Column("keep-alive"), Column("concurrency", True)] + ([Column("variant")] if variants else []) + [
        Column("tool"),
        Column("rank", title="within the cells of the same keep-alive, concurrency and variant"),
        Column("ranked by", title="throughput, or CPU per request where the server was the limit"),
        Column("ok req/s", True, "successful requests per second, median over the repetitions"),
        Column("noise", True, "half the range of the repetitions, or of the whole seconds with one repetition"),
        Column("error %", True, "failed requests of all requests"),
        Column("CPU µs / request", True, "the generator's CPU per request, median over the repetitions"),
        Column("limit", title="server: the probe far above its unloaded time, or the server's CPU saturated; "
                              "generator: the tool used all the CPU its design can use"),
        Column("evidence")]
    table = Table(tuple(cols), tuple(rows), css="results")
    return Section("ranking", "Like-for-like ranking", intro=RULE, tables=(table,))
