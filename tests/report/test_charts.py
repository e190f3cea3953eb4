"""The report's charts as SVG written by hand: well-formed, escaped, deterministic, every point
drawn once with its tip, legends inside the picture, axes that read (1-2-5 on log scales), and
the dot-and-whisker charts of the report's top."""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest

from toolbench.report import charts, svg_axes, svg_draw

NS = "{http://www.w3.org/2000/svg}"
NAN = float("nan")


def parse(svg: str) -> ET.Element:
    assert svg.startswith("<svg")
    return ET.fromstring(svg)  # raises on anything that is not well-formed XML


def view_box(root: ET.Element) -> tuple[float, float]:
    _, _, width, height = (float(v) for v in root.get("viewBox", "").split())
    return width, height


def plot_markers(root: ET.Element) -> list[ET.Element]:
    """The markers drawn at data points: every <use> of a panel (the legend's are apart)."""
    return [use for g in root.iter(f"{NS}g") if g.get("class") == "panel" for use in g.iter(f"{NS}use")]


def plot_box(svg: str) -> tuple[float, float, float, float]:
    """The plot area of the first panel, from its axis lines (left spine down, bottom spine across)."""
    x0, y0, y1, x1 = (float(v) for v in re.search(r'd="M([\d.]+),([\d.]+)V([\d.]+)H([\d.]+)" fill="none" '
                                                  r'stroke="#333"', svg).groups())
    return x0, y0, x1, y1


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


AXES = charts.Axes("concurrency (connections)", "successful requests/s", y_from_zero=True)


def test_a_chart_is_well_formed_named_and_described() -> None:
    lines = [charts.Line("ab", [1, 2, 3], [10, 20, 30]), charts.Line("siege", [1, 2], [5, NAN])]
    svg = charts.line_chart("tp", lines, AXES, alt="Rates <per> tool", title="Throughput")
    root = parse(svg)
    assert root.get("role") == "img" and root.get("aria-labelledby") == "tp-title"
    assert "width" not in root.attrib and "height" not in root.attrib  # sized by CSS through the viewBox
    assert root.find(f"{NS}title").text == "Rates <per> tool" and root.find(f"{NS}title").get("id") == "tp-title"
    assert root.find(f"{NS}desc").text == "Series: ab (3 points); siege (1 point)."
    shown = texts(root)
    assert "Throughput" in shown and "concurrency (connections)" in shown and "successful requests/s" in shown


def test_every_finite_point_has_one_marker_and_its_tip_and_nan_points_have_none() -> None:
    ys = [1.0, NAN, 3.0, 4.0, float("inf"), 2.0]
    tips = tuple(f"point {i}" for i in range(len(ys)))
    lines = [charts.Line("a", [1, 2, 3, 4, 5, 6], ys, charts.Style(0), tips=tips),
             charts.Line("b", [1, 2, 3], [2.0, 2.5, NAN], charts.Style(1, "--"))]
    root = parse(charts.line_chart("m", lines, charts.Axes("x", "y"), "alt"))
    assert len(plot_markers(root)) == 4 + 2
    tipped = [g.find(f"{NS}title").text for g in root.iter(f"{NS}g") if g.find(f"{NS}title") is not None]
    assert tipped == ["point 0", "point 2", "point 3", "point 5"]


def test_tips_that_do_not_match_the_points_are_left_out_rather_than_misplaced() -> None:
    line = charts.Line("a", [1, 2, 3], [1, 2, 3], tips=("one", "two"))
    svg = charts.line_chart("m", [line], charts.Axes("x", "y"), "alt")
    assert "<title>one" not in svg and len(plot_markers(parse(svg))) == 3


@pytest.mark.parametrize("hostile", ['<script>alert(1)</script>', 'say "hi" & <b>bye</b>', "it's $x^2$"])
def test_untrusted_text_is_escaped_everywhere(hostile: str) -> None:
    line = charts.Line(hostile, [1, 2], [1, 2], tips=(hostile, hostile))
    axes = charts.Axes(hostile, hostile, x_ticks=(charts.Tick(1.0, hostile),))
    svg = charts.panels_chart("u", [charts.Panel(hostile, [line]), charts.Panel("b", [line])], axes, alt=hostile)
    assert "<script" not in svg and "<b>" not in svg and '"hi"' not in svg
    root = parse(svg)
    assert root.find(f"{NS}title").text == hostile
    # Every place it is drawn shows it as it is, once parsed: a legend, a title, two axis labels, a tick.
    assert texts(root).count(hostile) >= 5
    assert [g.find(f"{NS}title").text for g in root.iter(f"{NS}g") if g.find(f"{NS}title") is not None] == [hostile] * 4


def test_same_data_give_the_same_bytes_and_ids_are_unique_per_chart() -> None:
    panels = [charts.Panel(f"c{c}", [charts.Line(f"s{i}", [1, 2, 4], [i + 1, i + 2, i + 4], charts.Style(i))
                                     for i in range(8)]) for c in range(3)]
    axes = charts.Axes("x", "y", log_y=True)
    first = charts.panels_chart("one", panels, axes, "alt")
    assert first == charts.panels_chart("one", panels, axes, "alt")
    second = charts.panels_chart("two", panels, axes, "alt")
    ids = re.findall(r'\bid="([^"]+)"', first + second)
    assert len(ids) == len(set(ids)) and all(i.startswith(("one-", "two-")) for i in ids)
    # Every reference names an id of its own chart: nothing outside, nothing of another chart.
    for svg, prefix in ((first, "one-"), (second, "two-")):
        refs = re.findall(r'href="#([^"]+)"', svg)
        assert refs and set(refs) <= set(re.findall(r'\bid="([^"]+)"', svg)) and all(r.startswith(prefix) for r in refs)
        assert "<script" not in svg and not re.search(r"url\(|https?://(?!www\.w3\.org/2000/svg\")", svg)


def test_each_tool_keeps_its_marker_shape_and_colour_and_reads_without_colour() -> None:
    lines = [charts.Line(f"t{i}", [1, 2], [i, i + 1], charts.keepalive_style(i, i % 2 == 0)) for i in range(8)]
    lines.append(charts.Line("hollow", [1, 2], [3, 3], charts.Style(2, ":", hollow=True)))
    svg = charts.line_chart("k", lines, charts.Axes("x", "y"), "alt")
    root = parse(svg)
    shapes = root.find(f"{NS}defs")
    assert [s.get("id") for s in shapes] == [f"k-m{i}" for i in range(8)]
    assert len({ET.tostring(s) .replace(s.get("id").encode(), b"") for s in shapes}) == 8  # all different
    markers = plot_markers(root)
    assert {(m.get("href"), m.get("stroke")) for m in markers[:16]} == {
        (f"#k-m{i}", svg_draw.PALETTE[i]) for i in range(8)}
    assert [m.get("fill") for m in markers[16:]] == ["#fff", "#fff"]  # hollow
    dashes = re.findall(r'<path d="M[^"]*" fill="none" stroke="[^"]+" stroke-width="1.6"( stroke-dasharray="[^"]+")?',
                        svg)
    assert "" in dashes and ' stroke-dasharray="6 3"' in dashes and ' stroke-dasharray="1.6 2.6"' in dashes


def test_a_style_without_a_line_draws_markers_only() -> None:
    svg = charts.line_chart("n", [charts.Line("marks", [1, 2, 3], [1, 2, 3], charts.Style(6, "none"))],
                            charts.Axes("x", "y"), "alt")
    assert len(plot_markers(parse(svg))) == 3 and 'stroke-width="1.6"' not in svg


def test_error_bars_span_low_to_high() -> None:
    line = charts.Line("a", [1, 2], [10, 20], lows=[5, 15], highs=[12, 30])
    svg = charts.line_chart("e", [line], charts.Axes("x", "y", y_from_zero=True), "alt")
    bars = re.search(r'<path d="([^"]+)" fill="none" stroke="#0072B2" stroke-width="0.8"/>', svg).group(1)
    ys = [float(v) for v in re.findall(r"V([\d.]+)", bars)]
    tops = [float(v) for v in re.findall(r"M[\d.]+,([\d.]+)V", bars)]
    assert len(ys) == 2 and all(top < foot for top, foot in zip(tops, ys))
    # The second bar is longer: 15 units against 7, on the same scale.
    assert (ys[1] - tops[1]) / (ys[0] - tops[0]) == pytest.approx(15 / 7, rel=0.02)


NAMES = {"short": "t{i}", "long": "a tool with a rather long name and its variant, keep-alive on, run {i} of the study",
         "huge": "a variant named at length " * 6 + "number {i}"}


@pytest.mark.parametrize("count, name", [(12, "long"), (12, "short"), (30, "short"), (3, "long"), (2, "huge")])
@pytest.mark.parametrize("panels", [1, 4])
def test_the_legend_is_never_clipped(count: int, name: str, panels: int) -> None:
    name = NAMES[name]
    lines = [charts.Line(name.format(i=i), [1, 2], [i, i + 1], charts.Style(i)) for i in range(count)]
    svg = charts.panels_chart("l", [charts.Panel(f"p{n}", lines) for n in range(panels)], charts.Axes("x", "y"),
                              "alt")
    root = parse(svg)
    width, height = view_box(root)
    legend = next(g for g in root.iter(f"{NS}g") if g.get("class") == "legend")
    shown = []
    for text in legend.iter(f"{NS}text"):
        spans = list(text.iter(f"{NS}tspan")) or [text]
        for n, span in enumerate(spans):
            content = "".join(span.itertext()) if span is not text else text.text
            x, y = float(span.get("x")), float(text.get("y")) + n * svg_draw.TICK_FONT * svg_draw.LINE_HEIGHT
            assert 0 <= x and x + svg_draw.text_width(content, svg_draw.TICK_FONT) <= width, content
            assert 0 < y <= height - 2, content
        shown.append(" ".join(("".join(s.itertext()) for s in spans)) if spans[0] is not text else text.text)
    assert shown == [line.label for line in lines]  # every entry, whole, in style order
    for use in legend.iter(f"{NS}use"):
        assert 0 < float(use.get("x")) < width and 0 < float(use.get("y")) < height


def test_log_axes_tick_at_1_2_5_with_plain_labels() -> None:
    for lo, hi in ((0.3, 40.0), (1.0, 1e6), (3.0, 4.0), (0.001, 0.5), (7.0, 7.0)):
        plan = svg_axes.auto_axis([lo, hi], True)
        assert len(plan.ticks) >= 2 and plan.lo <= lo and hi <= plan.hi
        for at, label in plan.ticks:
            assert f"{at / 10 ** math.floor(math.log10(at)):.6g}" in ("1", "2", "5")
            assert label == f"{at:g}" and "e" not in label or at >= 1e6
    lines = [charts.Line("a", [1, 10, 100], [0.4, 3.0, 80.0])]
    root = parse(charts.line_chart("g", lines, charts.Axes("x", "ms", log_x=True, log_y=True), "alt"))
    labels = [t for t in texts(root) if re.fullmatch(r"[\d.]+", t)]
    assert {"0.5", "1", "2", "5", "10", "20", "50"} <= set(labels)


def test_linear_labels_group_thousands_and_ticks_are_nice() -> None:
    root = parse(charts.line_chart("y", [charts.Line("a", [1, 2], [12_000, 61_000])], AXES, "alt"))
    assert {"0", "20,000", "40,000", "60,000"} <= set(texts(root))
    assert svg_axes.auto_axis([0.1, 0.3], False).ticks[:3] == ((0.1, "0.1"), (0.15, "0.15"), (0.2, "0.2"))
    integer = svg_axes.auto_axis([0, 7], False, integer=True, count=20)
    assert all(at == int(at) for at, _ in integer.ticks)


@pytest.mark.parametrize("log", [False, True])
def test_a_single_x_value_is_centred(log: bool) -> None:
    svg = charts.line_chart("c", [charts.Line("a", [50, 50], [1, 2])], charts.Axes("x", "y", log_x=log, x_exact=True),
                            "alt")
    x0, _, x1, _ = plot_box(svg)
    xs = {float(m.get("x")) for m in plot_markers(parse(svg))}
    assert len(xs) == 1 and xs.pop() == pytest.approx((x0 + x1) / 2, abs=0.1)
    assert "50" in texts(parse(svg))


def test_exact_and_fixed_x_ticks_label_their_values() -> None:
    xs = [1.0, 10.0, 50.0, 100.0, 1000.0]
    root = parse(charts.line_chart("x", [charts.Line("a", xs, [1, 2, 3, 4, 5])],
                                   charts.Axes("c", "y", log_x=True, x_exact=True), "alt"))
    assert {"1", "10", "50", "100", "1000"} <= set(texts(root))
    ticks = (charts.Tick(1.0, "p0"), charts.Tick(10.0, "p90"), charts.Tick(1000.0, "p99.9"))
    root = parse(charts.line_chart("f", [charts.Line("a", [1, 10], [1, 2])], charts.Axes("p", "y", log_x=True,
                                                                                         x_ticks=ticks), "alt"))
    assert {"p0", "p90", "p99.9"} <= set(texts(root))


def test_an_empty_chart_still_draws() -> None:
    root = parse(charts.panels_chart("e", [], charts.Axes("x", "y"), "nothing"))
    assert root.find(f"{NS}desc").text == "No data drawn." and plot_markers(root) == []


# --- interval charts ----------------------------------------------------------------------------

def dot(label: str, value: float, spread: float | None = 5.0, index: int = 0, href: str = "",
        note: str = "") -> charts.Dot:
    low, high = (value - spread, value + spread) if spread is not None else (None, None)
    return charts.Dot(label, value, low, high, charts.Style(index), f"{label}: {value}", href, note)


GROUP = charts.DotGroup("concurrency 10, keep-alive on",
                        (dot("ab", 120, 10, 0, "#row-ab"), dot("siege", 80, 20, 1, "javascript:alert(1)"),
                         dot("wrk", 100, None, 2, "#bad id"), dot("hey", 10, 2, 3, 'x" onclick="y', "↯")),
                        "successful requests/s")


def dot_markers(root: ET.Element) -> list[ET.Element]:
    return list(root.iter(f"{NS}use"))


def test_interval_charts_are_one_well_formed_svg_per_group_with_their_own_ids() -> None:
    found = charts.interval_charts("top", [GROUP, GROUP], "Who leads")
    assert len(found) == 2
    ids = re.findall(r'\bid="([^"]+)"', "".join(found))
    assert len(ids) == len(set(ids))
    for n, svg in enumerate(found):
        root = parse(svg)
        assert view_box(root)[0] == 380 and root.get("aria-labelledby") == f"top-{n}-title"
        assert root.find(f"{NS}title").text == "concurrency 10, keep-alive on: Who leads"
        assert "siege: 80 (60 to 100)" in root.find(f"{NS}desc").text
    assert found == charts.interval_charts("top", [GROUP, GROUP], "Who leads")  # deterministic bytes


def test_dots_lie_in_the_order_of_their_values_with_tips_and_whiskers() -> None:
    root = parse(charts.interval_charts("i", [GROUP], "alt")[0])
    xs = [float(m.get("x")) for m in dot_markers(root)]
    values = [d.value for d in GROUP.dots]
    assert sorted(range(4), key=lambda i: xs[i]) == sorted(range(4), key=lambda i: values[i])
    assert [g.find(f"{NS}title").text for g in root.iter(f"{NS}g")] == [d.tip for d in GROUP.dots]
    assert len([p for p in root.iter(f"{NS}path") if p.get("class") == "whisker"]) == 3  # wrk has no interval
    assert {"120", "80", "100", "10", "successful requests/s"} <= set(texts(root))


def test_the_band_is_the_first_dots_interval_and_can_be_left_out() -> None:
    root = parse(charts.interval_charts("b", [GROUP], "alt")[0])
    band = next(r for r in root.iter(f"{NS}rect") if r.get("class") == "band")
    whisker = next(p for p in root.iter(f"{NS}path") if p.get("class") == "whisker")
    a, b = (float(v) for v in re.match(r"M([\d.]+),[\d.]+H([\d.]+)", whisker.get("d")).groups())
    assert float(band.get("x")) == pytest.approx(a, abs=0.1)
    assert float(band.get("width")) == pytest.approx(b - a, abs=0.2)
    plain = charts.DotGroup(GROUP.title, GROUP.dots, GROUP.unit, band=False)
    assert 'class="band"' not in charts.interval_charts("b", [plain], "alt")[0]


def test_only_links_within_the_page_are_kept() -> None:
    svg = charts.interval_charts("h", [GROUP], "alt")[0]
    root = parse(svg)
    links = [a.get("href") for a in root.iter(f"{NS}a")]
    assert links == ["#row-ab", "#row-ab"]  # the label and the dot of ab; the others get no link
    assert "javascript" not in svg and "onclick" not in svg and "#bad id" not in svg


def test_long_labels_are_cut_with_their_full_text_in_a_title_and_notes_follow() -> None:
    long = "a very long tool name, with its variant and more"
    root = parse(charts.interval_charts("n", [charts.DotGroup("g", (dot(long, 5, note="(ok 97 %)"),), "u")],
                                        "alt")[0])
    label = next(t for t in root.iter(f"{NS}text") if t.find(f"{NS}title") is not None)
    assert label.find(f"{NS}title").text == f"{long} (ok 97 %)"
    shown = "".join(label.itertext()).replace(label.find(f"{NS}title").text, "")
    assert shown.endswith("… (ok 97 %)") and len(shown) < len(long)


def test_a_wide_range_goes_log_and_changes_get_a_zero_line() -> None:
    wide = charts.DotGroup("g", (dot("a", 5000, 100), dot("b", 20, 2, 1)), "u")
    labels = set(texts(parse(charts.interval_charts("w", [wide], "alt")[0])))
    assert {"100", "1000"} <= labels and "0" not in labels  # a log axis has no 0
    change = charts.DotGroup("c", (dot("a", 12, 4), dot("b", -8, 3, 1)), "change, %", band=False, zero=True)
    svg = charts.interval_charts("z", [change], "alt")[0]
    root = parse(svg)
    assert 'class="zero"' in svg and {"+12.0", "-8.0"} <= set(texts(root))
    zero = float(re.search(r'class="zero" d="M([\d.]+)', svg).group(1))
    xs = [float(m.get("x")) for m in dot_markers(root)]
    assert xs[1] < zero < xs[0]
