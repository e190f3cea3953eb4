"""Report tables: rows that can be linked to, a filter over long tables, and a page that reads on a phone.

The browser tests open a rendered report in headless Chromium (tests/helpers/report_cdp.py); the
report is the full study plus a failed cell and a description each holding a long unbreakable
word, as a stored run may (a URL, a generated name), so that the phone test has something to wrap."""
from __future__ import annotations

import dataclasses
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from helpers import report_cdp, report_data
from toolbench.record import store
from toolbench.record.schema import Status
from toolbench.report import anchors, render

REPO = Path(__file__).parents[2]
CHOOSE = REPO / "tests/fixtures/runs/choose-a-tool"
CHROMIUM = report_cdp.find_chromium()
NO_CHROMIUM = "chromium is not installed (scripts/install.sh installs it)"
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
SAFE_ID = re.compile(r"[A-Za-z0-9_-]+")
LONG = "unbreakable" * 14  # 154 characters with no break opportunity
LONG_CELL = "siege-c100-close-rep1"


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.row_ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value is not None:
                self.ids.append(value)
                if tag == "tr":
                    self.row_ids.append(value)


def ids_of(html: str) -> _Ids:
    parser = _Ids()
    parser.feed(html)
    return parser


def rows_with_anchors(data) -> list[str]:
    return [row.anchor for s in data.sections for t in s.tables for row in t.rows if row.anchor]


def test_every_row_anchor_of_a_stored_run_is_unique_safe_and_on_its_row(tmp_path: Path) -> None:
    output, data = render.render_with_data([CHOOSE], tmp_path / "report.html")
    anchored = rows_with_anchors(data)
    results = next(s for s in data.sections if s.id == "results").tables[0]
    ranking = next(s for s in data.sections if s.id == "ranking").tables[0]
    # Every cell and every like-for-like row has one; no two are alike, and each is safe in an id and a URL.
    assert all(row.anchor.startswith("cell-") for row in results.rows)
    assert all(row.anchor.startswith("point-") for row in ranking.rows)
    assert len(anchored) >= len(results.rows) + len(ranking.rows) > 100
    assert len(set(anchored)) == len(anchored)
    assert all(SAFE_ID.fullmatch(a) for a in anchored), [a for a in anchored if not SAFE_ID.fullmatch(a)]
    found = ids_of(output.read_text(encoding="utf-8"))
    assert sorted(found.row_ids) == sorted(anchored)  # each rendered as its row's id, on one <tr>
    assert len(set(found.ids)) == len(found.ids), "an id used twice in the page"


def test_row_anchors_stay_unique_when_two_runs_share_their_cell_names(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    first = report_data.full_run(root)
    second = report_data.full_run(root, "study-20260111T090000Z", "2026-01-11T09:00:00.000Z")
    output, data = render.render_with_data([first, second], tmp_path / "both.html")
    anchored = rows_with_anchors(data)
    assert anchors.cell("", "ab-c10-ka-rep1") not in anchored  # the run's label is part of it
    assert len(set(anchored)) == len(anchored) > 2 * 12
    found = ids_of(output.read_text(encoding="utf-8"))
    assert len(set(found.ids)) == len(found.ids)


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    with report_cdp.Browser(CHROMIUM) as b:
        yield b


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = report_data.full_run(tmp_path_factory.mktemp("runs"))
    run = store.RunDir(path)
    manifest = run.manifest()
    run.write_manifest(dataclasses.replace(manifest, scenario=dataclasses.replace(
        manifest.scenario, description=f"a study of {LONG}")))
    run.append(report_data.not_run("study", "siege", 100, False, Status.FAILED,
                                   f"connection refused at http://127.0.0.1:8080/{LONG}"))
    return render.render_run(path)


def open_clean(browser: report_cdp.Browser, url: str, **kwargs) -> report_cdp.Page:
    page = browser.open(url, **kwargs)
    assert page.problems == [], page.problems
    return page


# The groups of a table (a <tbody> per row when it has notes): text, shown or hidden, first cell.
GROUPS = """(() => { const t = document.querySelector('#%s table');
    const gs = t.tBodies.length > 1 ? [...t.tBodies] : [...t.tBodies[0].rows];
    return gs.map(g => ({text: g.textContent, hidden: g.hidden, shown: g.getClientRects().length > 0,
                         first: (g.rows ? g.rows[0] : g).cells[0].textContent.trim(),
                         rate: (g.rows ? g.rows[0] : g).cells[8].getAttribute('data-sort')})); })()"""
FILTER = """(() => { const f = document.querySelector('#%s table').closest('.scroll').previousElementSibling;
    const input = f.querySelector('input'); input.value = %s; input.dispatchEvent(new Event('input'));
    return [f.querySelector('label').textContent.trim(), f.querySelector('output').textContent]; })()"""


@needs_chromium
def test_at_phone_width_the_page_does_not_scroll_sideways_and_wide_tables_scroll_inside(
        browser: report_cdp.Browser, report: Path) -> None:
    page = open_clean(browser, report.as_uri(), width=390)
    assert browser.evaluate(page, "window.innerWidth") == 390
    assert browser.evaluate(page, "document.documentElement.scrollWidth <= window.innerWidth")
    # Nothing but a table wrapper's content reaches past the window: header, nav, verdict, figures, prose.
    past = browser.evaluate(page, """[...document.body.querySelectorAll('*')]
        .filter(e => !(e.parentElement && e.parentElement.closest('.scroll')))
        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
        .map(e => e.tagName + ' ' + e.textContent.slice(0, 40))""")
    assert past == []
    assert LONG in browser.evaluate(page, "document.body.innerText.replace(/\\s+/g, '')")
    wide = browser.evaluate(page, """(() => { const s = document.querySelector('#results .scroll');
        return [s.scrollWidth, s.clientWidth, getComputedStyle(s).overflowX]; })()""")
    assert wide[0] > 2 * wide[1] and wide[2] == "auto", wide


@needs_chromium
def test_the_first_column_stays_in_view_when_a_wide_table_scrolls(browser: report_cdp.Browser, report: Path) -> None:
    page = open_clean(browser, report.as_uri(), width=390)
    where = """(() => { const row = document.querySelector('#results tbody tr');
        return [row.cells[0].getBoundingClientRect().left, row.cells[1].getBoundingClientRect().left]; })()"""
    before = browser.evaluate(page, where)
    style = browser.evaluate(page, """(() => { const c = getComputedStyle(document.querySelector('#results tbody td'));
        return [c.position, c.left, c.backgroundColor]; })()""")
    assert style == ["sticky", "0px", "rgb(255, 255, 255)"]  # opaque: cells scrolled under it do not show
    assert browser.evaluate(page, "getComputedStyle(document.querySelector('#results thead th')).position") == "sticky"
    browser.evaluate(page, "document.querySelector('#results .scroll').scrollLeft = 300")
    after = browser.evaluate(page, where)
    assert after[0] == pytest.approx(before[0], abs=0.5) and after[1] < before[1] - 250, (before, after)
    # A note's text stays in view and wraps rather than running the whole table's width.
    note = browser.evaluate(page, """(() => { const d = document.querySelector('#results tr.note td > div');
        const s = d.closest('.scroll').getBoundingClientRect(); const r = d.getBoundingClientRect();
        return [r.left >= s.left, r.right <= s.right]; })()""")
    assert note == [True, True]


@needs_chromium
def test_a_long_table_filters_by_every_term_and_counts_what_it_shows(browser: report_cdp.Browser, report: Path) -> None:
    page = open_clean(browser, report.as_uri(), width=1280)
    groups = browser.evaluate(page, GROUPS % "results")
    assert len(groups) == 13 and all(g["shown"] for g in groups)
    label, count = browser.evaluate(page, FILTER % ("results", json.dumps("")))
    assert (label, count) == ("Filter rows", "13 of 13 rows")
    # Terms in any case and order; each must appear in the row or its notes.
    label, count = browser.evaluate(page, FILTER % ("results", json.dumps("  KA   siege ")))
    groups = browser.evaluate(page, GROUPS % "results")
    wanted = [g["first"] for g in groups if "ka" in g["text"].lower() and "siege" in g["text"].lower()]
    shown = [g["first"] for g in groups if g["shown"]]
    assert shown == wanted and 0 < len(shown) < 13, shown
    assert all(g["hidden"] != g["shown"] for g in groups)
    assert count == f"{len(shown)} of 13 rows"
    # A term only in a note (the refused connection's URL) finds its row.
    _, count = browser.evaluate(page, FILTER % ("results", json.dumps("refused 127.0.0.1")))
    assert [g["first"] for g in browser.evaluate(page, GROUPS % "results") if g["shown"]] == [LONG_CELL]
    assert count == "1 of 13 rows"
    _, count = browser.evaluate(page, FILTER % ("results", json.dumps("no-such-thing")))
    assert count == "0 of 13 rows" and not any(g["shown"] for g in browser.evaluate(page, GROUPS % "results"))
    _, count = browser.evaluate(page, FILTER % ("results", json.dumps("")))
    assert count == "13 of 13 rows" and all(g["shown"] for g in browser.evaluate(page, GROUPS % "results"))
    # Only sortable tables of more than eight rows get a filter: not the Environment table, not a short one.
    filtered = browser.evaluate(page, """[...document.querySelectorAll('.filter')]
        .map(f => f.nextElementSibling.querySelector('table').closest('section').id)""")
    assert "results" in filtered and "environment" not in filtered
    short = browser.evaluate(page, """[...document.querySelectorAll('table.sortable')].filter(t =>
        (t.tBodies.length > 1 ? t.tBodies.length : t.tBodies[0].rows.length) <= 8).length""")
    sortable = browser.evaluate(page, "document.querySelectorAll('table.sortable').length")
    assert short > 0 and len(filtered) == sortable - short


@needs_chromium
def test_sorting_still_works_on_a_filtered_table(browser: report_cdp.Browser, report: Path) -> None:
    page = open_clean(browser, report.as_uri(), width=1280)
    _, count = browser.evaluate(page, FILTER % ("results", json.dumps("siege")))
    shown_before = sorted(g["first"] for g in browser.evaluate(page, GROUPS % "results") if g["shown"])
    browser.evaluate(page, """[...document.querySelectorAll('#results thead th')]
                                .find(th => th.textContent.trim() === 'ok req/s').querySelector('button').click()""")
    groups = browser.evaluate(page, GROUPS % "results")
    shown = [g for g in groups if g["shown"]]
    assert sorted(g["first"] for g in shown) == shown_before and len(shown) < len(groups)
    rates = [g["rate"] for g in shown]
    numbers = [float(r) for r in rates if r]
    assert numbers == sorted(numbers) and len(numbers) >= 2 and rates[-1] == ""  # absent rates last
    assert browser.evaluate(page, "document.querySelector('#results th[aria-sort=ascending]').textContent").strip() \
        .startswith("ok req/s")
    assert count == f"{len(shown)} of {len(groups)} rows"


@needs_chromium
def test_the_report_has_no_filter_without_javascript(browser: report_cdp.Browser, report: Path) -> None:
    page = open_clean(browser, report.as_uri(), width=390, scripts=False)
    assert browser.evaluate(page, "document.querySelectorAll('.filter, input').length") == 0
    assert browser.evaluate(page, "document.documentElement.scrollWidth <= window.innerWidth")


TARGET = """(() => { const row = document.getElementById(%s); const r = row.getBoundingClientRect();
    const bg = getComputedStyle(row.cells[1]).backgroundColor;
    const group = row.nextElementSibling && row.nextElementSibling.classList.contains('note') ? row.parentElement : row;
    return {matches: row.matches(':target'), top: r.top, bottom: r.bottom, height: innerHeight,
            background: bg,
            outline: getComputedStyle(group).outlineStyle, width: getComputedStyle(group).outlineWidth,
            others: [...row.closest('table').querySelectorAll('td')].filter(td => !group.contains(td)
                    && getComputedStyle(td).backgroundColor === bg).length}; })()"""


@needs_chromium
@pytest.mark.parametrize("section,anchor", [
    ("results", anchors.cell("", LONG_CELL)),  # a row with notes under it, near the page's end
    ("ranking", anchors.point("", "siege, keep-alive on", "concurrency 10, keep-alive on")),
])
def test_a_link_to_a_row_scrolls_it_into_view_and_marks_it(browser: report_cdp.Browser, report: Path,
                                                           section: str, anchor: str) -> None:
    page = open_clean(browser, f"{report.as_uri()}#{anchor}", width=390, height=700)
    assert browser.evaluate(page, f"document.getElementById({json.dumps(anchor)}).closest('section').id") == section
    seen = browser.evaluate(page, TARGET % json.dumps(anchor))
    assert seen["matches"] and 0 <= seen["top"] and seen["bottom"] <= seen["height"], seen
    # Marked by a background and by an outline (never colour alone), and no other row with it.
    assert seen["background"] == "rgb(255, 244, 194)" and seen["outline"] == "solid" and seen["width"] == "2px"
    assert seen["others"] == 0


@needs_chromium
def test_a_link_to_a_row_the_filter_hides_clears_the_filter(browser: report_cdp.Browser, report: Path) -> None:
    page = open_clean(browser, report.as_uri(), width=390, height=700)
    anchor = anchors.cell("", LONG_CELL)
    _, count = browser.evaluate(page, FILTER % ("results", json.dumps("ab-c")))
    assert not browser.evaluate(page, f"document.getElementById({json.dumps(anchor)}).getClientRects().length")
    browser.evaluate(page, f"location.hash = {json.dumps('#' + anchor)}")
    browser.evaluate(page, "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    seen = browser.evaluate(page, TARGET % json.dumps(anchor))
    assert seen["matches"] and 0 <= seen["top"] and seen["bottom"] <= seen["height"], seen
    groups = browser.evaluate(page, GROUPS % "results")
    assert all(g["shown"] for g in groups)
    count = browser.evaluate(page, """document.querySelector('#results table').closest('.scroll')
                                       .previousElementSibling.querySelector('output').textContent""")
    assert count == "13 of 13 rows"
