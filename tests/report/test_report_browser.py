"""The report in a real browser: headless Chromium, no network, no sandbox (CI runs as root).

Opens a rendered report and a published index, and checks that nothing failed to load,
nothing was logged as an error, nothing reached for the network, the page reads with
JavaScript off, sorting works with it on, and the screenshot shows a page, not a blank."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from PIL import Image

from helpers import report_cdp, report_data
from toolbench.report import render, site

CHROMIUM = report_cdp.find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/install.sh installs it)")


@pytest.fixture(scope="module")
def browser():
    with report_cdp.Browser(CHROMIUM) as b:
        yield b


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render.render_run(report_data.full_run(tmp_path_factory.mktemp("runs")))


def assert_clean(page: report_cdp.Page) -> None:
    assert page.problems == [], page.problems
    assert page.requests and all(url.startswith("file://") for url in page.requests), page.requests


def test_report_renders_with_no_failed_load_no_console_error_and_a_real_screenshot(
        browser: report_cdp.Browser, report: Path, tmp_path: Path) -> None:
    page = browser.open(report.as_uri(), width=1280)
    assert_clean(page)
    assert browser.evaluate(page, "document.querySelectorAll('main section').length") == 14  # choice: which tool for which purpose
    # No time series: the recorded ab runs last under a second, so none has a whole second.
    assert browser.evaluate(page, "document.querySelectorAll('main figure svg').length") == 7
    # The answer at the top: one small chart per like-for-like comparison (two here).
    assert browser.evaluate(page, "document.querySelectorAll('#answer figure svg').length") == 2
    # Every chart drew with a size: inline SVG scaled by the stylesheet.
    sizes = browser.evaluate(page, "[...document.querySelectorAll('main figure svg')].map(s => "
                                   "[s.getBoundingClientRect().width, s.getBoundingClientRect().height])")
    assert all(w > 400 and h > 150 for w, h in sizes), sizes
    shot = browser.screenshot(page, tmp_path / "report.png")
    with Image.open(shot) as image:
        assert image.format == "PNG" and image.width >= 1200 and image.height > 3000
        colours = image.convert("RGB").resize((320, image.height // 4)).getcolors(1 << 16)
    assert colours is not None and len(colours) > 50, "a blank or near-blank page"
    white = max(count for count, rgb in colours if rgb == (255, 255, 255)) if colours else 0
    assert white < 0.97 * sum(count for count, _ in colours)


def test_tables_sort_when_a_heading_is_clicked(browser: report_cdp.Browser, report: Path) -> None:
    page = browser.open(report.as_uri())
    assert_clean(page)
    first_cells = """[...document.querySelectorAll('#results table tbody')].map(b => b.rows[0].cells[0].textContent)"""
    before = browser.evaluate(page, first_cells)
    browser.evaluate(page, """[...document.querySelectorAll('#results thead th')]
                                .find(th => th.textContent.trim() === 'ok req/s').querySelector('button').click()""")
    after = browser.evaluate(page, first_cells)
    assert sorted(after) == sorted(before) and after != before
    assert after[0] == "ab-c50-close-rep1"  # the lowest rate first: every request of it failed, a real 0
    rates = browser.evaluate(page, """[...document.querySelectorAll('#results table tbody')]
                                        .map(b => b.rows[0].cells[8].getAttribute('data-sort'))""")
    numbers = [float(r) for r in rates if r]
    assert numbers == sorted(numbers) and rates[-1] == ""  # absent rates last, never as 0
    header = browser.evaluate(page, "document.querySelector('#results th[aria-sort=ascending]').textContent")
    assert header.strip().startswith("ok req/s")


def test_the_report_reads_with_javascript_off(browser: report_cdp.Browser, report: Path) -> None:
    page = browser.open(report.as_uri(), scripts=False)
    assert_clean(page)
    text = browser.evaluate(page, "document.body.innerText")
    assert "ab generated the most successful requests/s" in text and "All results" in text
    assert browser.evaluate(page, "document.querySelectorAll('th button').length") == 0  # the script did not run


def test_the_published_index_opens_cleanly(browser: report_cdp.Browser, report: Path, tmp_path: Path) -> None:
    published = site.publish(report.parent.parent, tmp_path / "site")
    page = browser.open(published.index.as_uri())
    assert_clean(page)
    assert browser.evaluate(page, "document.querySelectorAll('tbody tr a').length") == 1


@pytest.fixture(scope="module")
def latency_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ab over four seconds (-g: every request's second and time) and the full run's cells."""
    root = tmp_path_factory.mktemp("latency")
    run = report_data.write_run(root, "seconds-20260115T090000Z", "seconds", "2026-01-15T09:00:00.000Z", [],
                                [report_data.Recorded("ab", "2.3-seconds-gnuplot", 4, False),
                                 report_data.Recorded("ab", "2.3-nokeepalive", 10, False),
                                 report_data.Recorded("siege", "4.0.7-time", 10, True)])
    return render.render_run(run)


# Each chart's points that name their value on hover: the marker drawn, its <title> beside it.
TIPS = """[...document.querySelectorAll('#%s figure svg g > title')].map(t => {
    const use = t.parentElement.querySelector('use'); const r = use.getBoundingClientRect();
    return [t.textContent, r.width, r.height, r.x + r.width / 2, r.y + window.scrollY + r.height / 2]; })"""
# What the pointer is over at a point: the marker, inside the group whose <title> the browser shows.
HOVERED = """(() => { const el = document.elementFromPoint(%f, %f);
    const g = el && el.closest('g'); const t = g && g.querySelector(':scope > title');
    return t ? t.textContent : null; })()"""


@pytest.mark.parametrize("scripts", [True, False])
def test_the_latency_views_draw_with_a_size_and_name_their_points_on_hover(
        browser: report_cdp.Browser, latency_report: Path, scripts: bool) -> None:
    page = browser.open(latency_report.as_uri(), width=1280, scripts=scripts)
    assert_clean(page)
    charts = {"latency-distribution": 2, "latency-time": 1}
    for section, count in charts.items():
        sizes = browser.evaluate(page, f"[...document.querySelectorAll('#{section} figure svg')].map(s => "
                                       "[s.getBoundingClientRect().width, s.getBoundingClientRect().height])")
        assert len(sizes) == count and all(w > 400 and h > 150 for w, h in sizes), (section, sizes)
        tips = browser.evaluate(page, TIPS % section)
        assert len(tips) > 10 and all(w > 2 and h > 2 for _, w, h, _, _ in tips), tips[:3]
        text, _, _, x, y = tips[-1]  # drawn last: no other marker lies over it
        browser.evaluate(page, f"window.scrollTo(0, {y} - 300)")
        top = browser.evaluate(page, "window.scrollY")
        assert browser.evaluate(page, HOVERED % (x, y - top)) == text
    over_time = [t for t, *_ in browser.evaluate(page, TIPS % "latency-time")]
    # ab over four seconds: p50, p90 and p99 of each second, named by second and percentile.
    assert len(over_time) == 3 * 4 + 3 * 1
    assert any(re.match(r"ab, keep-alive off, second 2: p99 \d+ ms of 734 requests$", t) for t in over_time), over_time
    distribution = [t for t, *_ in browser.evaluate(page, TIPS % "latency-distribution")]
    assert sum(t.endswith("(the slowest)") for t in distribution) == 2
    text = browser.evaluate(page, "document.getElementById('latency-time').innerText")
    assert "siege gives no per-request timings" in text
