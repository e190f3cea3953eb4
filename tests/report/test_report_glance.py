"""The top of every report answers its question at a glance: the question, a headline of at
most two sentences and one figure that shows the answer, before any table; every dot of that
figure links to a row that exists on the page. Checked on every stored run of the repository."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from toolbench.report import glance_text, render

REPO = Path(__file__).resolve().parents[2]
STORED = sorted(p.parent for p in (REPO / "tests/fixtures/runs").glob("*/manifest.json")) + sorted(
    p.parent for folder in ("tests/fixtures/studies", "docs/studies/published") for p in (REPO / folder).glob("*/manifest.json"))
PAIR = [REPO / "tests/fixtures/runs/pair-a", REPO / "tests/fixtures/runs/pair-b"]
# A sentence ends at . ! or ? followed by a space and a capital (or the end): "1.5", "c10." inside
# a sentence, "e.g." never appear in a headline.
SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z“\"(]|\s*$)")


class Page(HTMLParser):
    """The page's parts in document order, and what the checks need of them."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []  # "figure", "table", "nav", "verdict", "answer" as they open
        self.ids: set[str] = set()
        self.hrefs: list[str] = []  # links inside the answer section
        self.fragments: list[str] = []  # every link of the page to an element of the page
        self.texts: dict[str, str] = {}  # class -> text, for the answer's question and headline
        self._in_answer = 0
        self._capture: str | None = None
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        if tag in ("figure", "table", "nav"):
            self.order.append(tag)
        if tag == "section" and a.get("id") in ("answer", "verdict"):
            self.order.append(a["id"] or "")
            if a["id"] == "answer":
                self._in_answer = 1
        elif self._in_answer and tag == "section":
            self._in_answer += 1
        if self._in_answer and tag == "a" and a.get("href"):
            self.hrefs.append(a["href"] or "")
        if tag == "a" and (a.get("href") or "").startswith("#") and a["href"] != "#":
            self.fragments.append((a["href"] or "")[1:])
        if self._in_answer and tag == "p" and a.get("class") in ("question", "headline"):
            self._capture = a["class"]
            self.texts[self._capture or ""] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "p":
            self._capture = None
        if tag == "section" and self._in_answer:
            self._in_answer -= 1

    def handle_data(self, data: str) -> None:
        if self._capture:
            self.texts[self._capture] += data


def parsed(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def sentences(text: str) -> int:
    return len(SENTENCE_END.findall(text.strip()))


@pytest.fixture(scope="module", params=STORED + [PAIR], ids=lambda p: "compare" if isinstance(p, list) else p.name)
def rendered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Page:
    runs = request.param if isinstance(request.param, list) else [request.param]
    out = render.render_runs(runs, tmp_path_factory.mktemp("glance") / "report.html")
    return parsed(out.read_text(encoding="utf-8"))


def test_the_stored_runs_are_many_and_include_every_question() -> None:
    names = {p.name for p in STORED}
    assert {"choose-a-tool", "two-targets", "tie", "all-failed"} <= names
    assert any(n.startswith("study-001") for n in names)


def test_the_headline_is_at_most_two_sentences_and_the_question_comes_first(rendered: Page) -> None:
    assert rendered.texts.get("question", "").strip().endswith("?")
    headline = rendered.texts.get("headline", "").strip()
    assert headline and 1 <= sentences(headline) <= 2, headline


def test_the_answer_and_its_figure_come_before_any_table(rendered: Page) -> None:
    order = rendered.order
    assert order.index("answer") < order.index("nav") < order.index("verdict")
    if "table" in order and "figure" in order:
        assert order.index("figure") < order.index("table")


def test_every_link_of_the_answer_and_the_verdict_reaches_an_element_of_the_page(rendered: Page) -> None:
    local = [h[1:] for h in rendered.hrefs if h.startswith("#")]
    assert all(target in rendered.ids for target in local), set(local) - rendered.ids
    assert set(rendered.fragments) <= rendered.ids, set(rendered.fragments) - rendered.ids


def test_a_run_with_comparisons_has_an_answering_figure(tmp_path: Path) -> None:
    for name in ("choose-a-tool", "two-targets", "tie"):
        html = render.render_run(REPO / "tests/fixtures/runs" / name, tmp_path / f"{name}.html").read_text()
        top = html[html.index('id="answer"'):html.index("<nav")]
        assert "<figure" in top, name
        assert ("<svg" in top) != ('class="scorecard"' in top), name  # dots, or the scorecard for purposes


def test_choose_a_tool_opens_with_the_scorecard_ties_shaded_as_ties(tmp_path: Path) -> None:
    html = render.render_run(REPO / "tests/fixtures/runs/choose-a-tool", tmp_path / "r.html").read_text()
    top = html[html.index('id="answer"'):html.index("<nav")]
    cells = re.findall(r'<td class="([^"]+)"><span class="rank">([^<]+)</span>', top)
    assert cells
    for shade, rank in cells:
        assert ("=" in rank) == ("tie" in shade), (shade, rank)
        assert (rank == "—") == (shade == "none"), (shade, rank)
    assert any(rank == "1" and shade == "t0" for shade, rank in cells)


@pytest.mark.parametrize("description, question", [
    ("Which serves more connections that each wait 0.5 s - a thread per connection or gevent? The study drove",
     "Which serves more connections that each wait 0.5 s - a thread per connection or gevent?"),
    ("ab, siege and the bundled engine against nginx-static, keep-alive on and off", ""),
    ("Two runs. Which is faster?", ""),  # a question that does not open the description is not its question
])
def test_the_question_is_the_descriptions_opening_question(description: str, question: str) -> None:
    assert glance_text.question(description) == question


# Where each part of the answer ends, in CSS pixels from the top of the window, unscrolled.
BOTTOMS = """[".answer .question", ".answer .headline",
  ".answer-figure .dots svg, .answer-figure table.scorecard"].map(sel => {
    const el = document.querySelector(sel); return el ? el.getBoundingClientRect().bottom : null; })"""


@pytest.mark.parametrize("runs", [["choose-a-tool"], ["tie"], ["pair-a", "pair-b"]])
def test_at_1400_px_the_question_headline_and_answering_figure_show_without_scrolling(
        runs: list[str], tmp_path: Path) -> None:
    from helpers import report_cdp

    chromium = report_cdp.find_chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/install.sh installs it)")
    html = render.render_runs([REPO / "tests/fixtures/runs" / r for r in runs], tmp_path / "r.html")
    with report_cdp.Browser(chromium) as browser:
        page = browser.open(html.as_uri(), width=1400, height=900)
        bottoms = browser.evaluate(page, BOTTOMS)
        narrow = browser.open(html.as_uri(), width=390, height=844)
        wide = browser.evaluate(narrow, "document.documentElement.scrollWidth")
        # Printed, every topic of the verdict is open; afterwards they close again.
        closed = "document.querySelectorAll('details:not([open])').length"
        before = browser.evaluate(page, closed)
        printing = browser.evaluate(page, f"window.dispatchEvent(new Event('beforeprint')), {closed}")
        after = browser.evaluate(page, f"window.dispatchEvent(new Event('afterprint')), {closed}")
    assert before > 0 and printing == 0 and after == before
    assert all(b is not None and 0 < b <= 900 for b in bottoms), bottoms
    assert wide <= 390  # on a phone the page itself never scrolls sideways; wide tables scroll inside
