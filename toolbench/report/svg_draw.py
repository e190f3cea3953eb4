"""SVG elements for the report's charts: text, markers, line styles, the legend.

Everything here returns SVG text. Every string that may come from a stored run goes through
`esc`; coordinates are printed with one decimal, so the same data give the same bytes."""
from __future__ import annotations

import html
import math
from dataclasses import dataclass

# Okabe & Ito's palette: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")

TICK_FONT = 11
LABEL_FONT = 12
TITLE_FONT = 13
LINE_HEIGHT = 1.3  # of the font size, for wrapped text
INK = "#333"
GRID = "#e3e3e3"


@dataclass(frozen=True)
class Style:
    index: int = 0  # picks colour and marker
    linestyle: str = "-"
    hollow: bool = False


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def num(v: float) -> str:
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else ("0" if text == "-0" else text)


def colour(style: Style) -> str:
    return PALETTE[style.index % len(PALETTE)]


def marker_index(style: Style) -> int:
    return style.index % len(MARKERS)


def style_order(style: Style) -> tuple[int, int, bool]:
    """The same legend order in every chart: by tool, then keep-alive on before off."""
    dash = LINESTYLES.index(style.linestyle) if style.linestyle in LINESTYLES else 9
    return style.index, dash, style.hollow


# --- text ---------------------------------------------------------------------------------------

def text_width(text: str, size: float) -> float:
    """A generous estimate: wide (East Asian, emoji) characters count double, narrow ones less."""
    units = 0.0
    for ch in text:
        if ord(ch) > 0x2E80:
            units += 1.05
        elif ch in "il.,:;'|!ftjI ()[]":
            units += 0.4
        elif ch in "mwMW%@":
            units += 0.9
        else:
            units += 0.62
    return units * size


def wrap(text: str, width: float, size: float) -> list[str]:
    """Greedy word wrap to an estimated width; a word longer than the width is cut."""
    if text_width(text, size) <= width:
        return [text]
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        candidate = f"{current} {word}" if current else word
        if text_width(candidate, size) <= width or not current:
            current = candidate
        else:
            lines.append(current)
            current = word
        while text_width(current, size) > width and len(current) > 1:
            cut = _fitting(current, width, size)
            lines.append(current[:cut])
            current = current[cut:]
    lines.append(current)
    return lines


def _fitting(text: str, width: float, size: float) -> int:
    n = 1
    while n < len(text) and text_width(text[:n + 1], size) <= width:
        n += 1
    return n


def trimmed(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most - 1].rstrip() + "…"


def text(x: float, y: float, content: str, size: float = TICK_FONT, anchor: str = "start", extra: str = "",
         title: str = "") -> str:
    hover = f"<title>{esc(title)}</title>" if title else ""
    middle = "" if anchor == "start" else f' text-anchor="{anchor}"'
    return (f'<text x="{num(x)}" y="{num(y)}" font-size="{num(size)}"{middle}{extra}>'
            f"{hover}{esc(content)}</text>")


def lines_text(x: float, y: float, lines: list[str], size: float, anchor: str = "start", extra: str = "") -> str:
    """Wrapped text: the first line's baseline at y, the rest below it."""
    if len(lines) == 1:
        return text(x, y, lines[0], size, anchor, extra)
    middle = "" if anchor == "start" else f' text-anchor="{anchor}"'
    down = f' dy="{num(size * LINE_HEIGHT)}"'
    spans = "".join(f'<tspan x="{num(x)}"{down if i else ""}>{esc(line)}</tspan>' for i, line in enumerate(lines))
    return f'<text x="{num(x)}" y="{num(y)}" font-size="{num(size)}"{middle}{extra}>{spans}</text>'


# --- markers and lines --------------------------------------------------------------------------

def _polygon(points: list[tuple[float, float]]) -> str:
    return "M" + "L".join(f"{num(x)},{num(y)}" for x, y in points) + "Z"


def _star(outer: float, inner: float) -> list[tuple[float, float]]:
    return [((outer if i % 2 == 0 else inner) * math.sin(i * math.pi / 5),
             -(outer if i % 2 == 0 else inner) * math.cos(i * math.pi / 5)) for i in range(10)]


def _plus(arm: float, half: float, turn: float) -> list[tuple[float, float]]:
    corners = [(-half, -arm), (half, -arm), (half, -half), (arm, -half), (arm, half), (half, half),
               (half, arm), (-half, arm), (-half, half), (-arm, half), (-arm, -half), (-half, -half)]
    c, s = math.cos(turn), math.sin(turn)
    return [(x * c - y * s, x * s + y * c) for x, y in corners]


# One shape per entry of MARKERS, centred on 0,0, about 9 units across.
_SHAPES = (
    '<circle id="{id}" r="4"/>',
    '<path id="{id}" d="M-3.6,-3.6H3.6V3.6H-3.6Z"/>',
    '<path id="{id}" d="' + _polygon([(0, -4.8), (4.4, 3.2), (-4.4, 3.2)]) + '"/>',
    '<path id="{id}" d="' + _polygon([(0, -4.8), (3.8, 0), (0, 4.8), (-3.8, 0)]) + '"/>',
    '<path id="{id}" d="' + _polygon([(0, 4.8), (4.4, -3.2), (-4.4, -3.2)]) + '"/>',
    '<path id="{id}" d="' + _polygon(_plus(4.6, 1.5, 0.0)) + '"/>',
    '<path id="{id}" d="' + _polygon(_plus(5.0, 1.4, math.pi / 4)) + '"/>',
    '<path id="{id}" d="' + _polygon(_star(5.2, 2.2)) + '"/>',
)


def marker_id(prefix: str, style: Style) -> str:
    return f"{prefix}-m{marker_index(style)}"


def marker_defs(prefix: str, styles: list[Style]) -> str:
    """The marker shapes a chart uses, once each, drawn with <use> at every point."""
    used = sorted({marker_index(s) for s in styles})
    return "<defs>" + "".join(_SHAPES[i].format(id=f"{prefix}-m{i}") for i in used) + "</defs>" if used else ""


def marker(prefix: str, style: Style, x: float, y: float) -> str:
    paint = colour(style)
    fill = "#fff" if style.hollow else paint
    width = "1.3" if style.hollow else "0.8"
    return (f'<use href="#{marker_id(prefix, style)}" x="{num(x)}" y="{num(y)}" fill="{fill}" stroke="{paint}" '
            f'stroke-width="{width}"/>')


_DASHES = {"-": "", "solid": "", "--": "6 3", "dashed": "6 3", ":": "1.6 2.6", "dotted": "1.6 2.6",
           "-.": "6 2.5 1.6 2.5", "dashdot": "6 2.5 1.6 2.5"}


def draws_line(style: Style) -> bool:
    """matplotlib's names for no line ("none", "", " ") draw markers only."""
    return style.linestyle in _DASHES


def stroke(style: Style, width: float = 1.6) -> str:
    dash = _DASHES.get(style.linestyle, "")
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    return f'fill="none" stroke="{colour(style)}" stroke-width="{num(width)}"{dashed}'


def polyline(points: list[tuple[float, float] | None], style: Style) -> str:
    """One path through the points; None breaks it (a point not drawn leaves a gap)."""
    parts, move = [], True
    for point in points:
        if point is None:
            move = True
            continue
        parts.append(f"{'M' if move else 'L'}{num(point[0])},{num(point[1])}")
        move = False
    if not parts or not draws_line(style):
        return ""
    return f'<path d="{"".join(parts)}" {stroke(style)}/>'


# --- legend -------------------------------------------------------------------------------------

SAMPLE = 24  # the line sample before a legend label
_GAP = 6
_ENTRY_GAP = 18


@dataclass(frozen=True)
class LegendBox:
    svg: str
    width: float
    height: float


def entry_width(label: str) -> float:
    return SAMPLE + _GAP + text_width(label, TICK_FONT) + _ENTRY_GAP


def legend(prefix: str, entries: list[tuple[str, Style]], x: float, y: float, width: float,
           one_column: bool = False) -> LegendBox:
    """Entries in a grid of equal columns as many as fit `width` (one when `one_column`), the
    labels wrapped where one is wider than its column: the box grows downwards, never clipped."""
    if not entries:
        return LegendBox("", 0.0, 0.0)
    widest = max(entry_width(label) for label, _ in entries)
    column = min(widest, width)
    columns = 1 if one_column else max(1, min(len(entries), int(width // column)))
    left = x + (0.0 if one_column else (width - columns * column) / 2)
    line = TICK_FONT * LINE_HEIGHT
    out, top = ['<g class="legend">'], y
    for start in range(0, len(entries), columns):
        row = [(label, style, wrap(label, column - SAMPLE - _GAP - _ENTRY_GAP / 2, TICK_FONT))
               for label, style in entries[start:start + columns]]
        for i, (label, style, lines) in enumerate(row):
            ex, mid = left + i * column, top + line / 2
            if draws_line(style):
                out.append(f'<path d="M{num(ex)},{num(mid)}h{SAMPLE}" {stroke(style)}/>')
            out.append(marker(prefix, style, ex + SAMPLE / 2, mid))
            out.append(lines_text(ex + SAMPLE + _GAP, mid + TICK_FONT * 0.35, lines, TICK_FONT))
        top += line * max(len(lines) for _, _, lines in row) + 4
    out.append("</g>")
    used = columns * column
    return LegendBox("".join(out), used, top - y)


def svg_open(chart_id: str, width: float, height: float, alt: str, desc: str) -> str:
    """The root element: size from CSS through the viewBox, named by its <title> for screen readers."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {num(width)} {num(height)}" role="img" '
            f'aria-labelledby="{chart_id}-title" aria-describedby="{chart_id}-desc" font-family="sans-serif" '
            f'fill="{INK}"><title id="{chart_id}-title">{esc(alt)}</title><desc id="{chart_id}-desc">{esc(desc)}'
            f'</desc><rect width="100%" height="100%" fill="#fff"/>')
