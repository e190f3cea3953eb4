"""Rendering reports and sites from run folders on disk: one self-contained file, links by
relative path, failed cells, absent metrics, several runs compared, and the CLI around it."""
from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from helpers import report_data
from toolbench.cli.main import main
from toolbench.errors import StoreError, ToolbenchError
from toolbench.report import render, site


class Refs(HTMLParser):
    """Every reference the page makes: links, sources, styles, scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.sources: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name == "href" and tag == "a":
                self.hrefs.append(value or "")
            elif name in ("src", "href", "xlink:href", "srcset", "data"):
                self.sources.append(f"{tag} {name}={value}")


def refs(html: str) -> Refs:
    parser = Refs()
    parser.feed(html)
    return parser


def without_time(html: str) -> str:
    return re.sub(r"Rendered \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", html)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reports")
    for make in (report_data.full_run, report_data.failed_run, report_data.absent_run, report_data.single_run,
                 report_data.empty_run):
        make(root)
    return root


def run_named(root: Path, prefix: str) -> Path:
    return next(p for p in root.iterdir() if p.name.startswith(prefix))


def test_one_self_contained_file_with_relative_links_to_raw_artifacts(root: Path) -> None:
    run = run_named(root, "study-")
    output = render.render_run(run)
    assert output == (run / "report.html").resolve()
    html = output.read_text()
    page = refs(html)
    # Nothing loads from anywhere: no external style, script, image or font; charts are inline SVG,
    # whose references stay inside the page and name ids that exist once (several charts share it).
    assert [s for s in page.sources if "=#" not in s] == []
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "duplicate ids"
    assert {s.split("=#", 1)[1] for s in page.sources} <= set(ids)
    assert "link" not in page.tags and "img" not in page.tags and "iframe" not in page.tags
    # Namespace names are not fetched; the target's URL is text in a table.
    text = re.sub(r'xmlns(:\w+)?="[^"]*"', "", html).replace("http://127.0.0.1:8080", "")
    assert not re.search(r"url\((?!#)|@import|https?://", text), "a reference to the network"
    # throughput, percentiles, HDR percentiles, latency histogram, tool vs probe, cost, latency over
    # time (ab -g); no time series: the recorded ab runs last under a second, so none has a whole
    # second of per-second data.
    assert html.count("<svg") == 7 + 2  # the sections' charts, and the answer's two comparisons
    assert "@media print" in html
    # Every link is relative and lands on a file of the run folder.
    links = [h for h in page.hrefs if not h.startswith("#")]
    assert any(h.startswith("raw/") for h in links)
    for href in links:
        assert "://" not in href and not href.startswith("/"), href
        assert (output.parent / unquote(href)).exists(), href


def test_sections_in_order_and_absent_never_zero(root: Path) -> None:
    html = render.render_run(run_named(root, "study-")).read_text()
    ids = re.findall(r'<section id="([a-z]+)"', html)
    assert ids == ["answer", "verdict", "environment", "choice", "ranking", "peaks", "throughput", "latency", "truth", "cost", "errors", "series",
                   "results"]
    absent = render.render_run(run_named(root, "siege-only-")).read_text()
    assert "Generator cost was not measured" in absent
    assert "&lt;10" in absent and "siege reports no latency percentiles." in absent


@pytest.mark.parametrize("prefix, expected", [
    ("failing-", "No cell finished ok"),
    ("single-", "the only tool here"),
    ("empty-", "This run has no results yet."),
    ("siege-only-", "siege, the only tool here"),
])
def test_runs_with_failed_cells_absent_metrics_a_single_result_or_none_render(root: Path, prefix: str,
                                                                              expected: str) -> None:
    html = render.render_run(run_named(root, prefix)).read_text()
    assert expected in html
    assert "Traceback" not in html and "Undefined" not in html


def test_rendering_twice_from_disk_gives_the_same_report(root: Path, tmp_path: Path) -> None:
    run = run_named(root, "study-")
    first = without_time(render.render_run(run, tmp_path / "a" / "report.html").read_text())
    second = without_time(render.render_run(run, tmp_path / "b" / "report.html").read_text())
    assert first == second


def test_several_runs_side_by_side_link_to_each_run(root: Path, tmp_path: Path) -> None:
    output = render.render_runs([run_named(root, "study-"), run_named(root, "single-")], tmp_path / "cmp.html")
    html = output.read_text()
    assert "Differences between runs" in html and "Δ single" in html
    for href in (h for h in refs(html).hrefs if not h.startswith("#")):
        assert (output.parent / unquote(href)).exists(), href


def test_a_damaged_run_is_a_one_line_error(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "cut"
    shutil.copytree(run_named(root, "single-"), run)
    with open(run / "results.jsonl", "a") as fh:
        fh.write('{"identity": {"cell_id": "ab-c1')  # a last line cut by a crash: stepped over, said
    assert main(["report", str(run)]) == 0
    assert capsys.readouterr().err == (f"toolbench: note: {run / 'results.jsonl'}:2: an incomplete last "
                                       "record (cut off by a crash) was skipped\n")
    with open(run / "results.jsonl", "a") as fh:
        fh.write("\n" + (run / "results.jsonl").read_text().splitlines()[0] + "\n")  # now in the middle
    with pytest.raises(StoreError, match=r"results.jsonl:2: not a result record"):
        render.render_run(run)
    assert main(["report", str(run)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toolbench: error: ") and err.count("\n") == 1
    assert main(["report", str(tmp_path)]) == 1
    assert "not a run directory" in capsys.readouterr().err


def test_cli_report_prints_the_file(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(run_named(root, "single-")), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out.resolve())
    with pytest.raises(ToolbenchError):
        render.render_runs([])


def test_publish_renders_every_run_and_an_index_a_static_host_serves_as_it_is(
        root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site_dir = tmp_path / "site"
    assert main(["publish", str(root), "--site", str(site_dir), "--with-raw"]) == 0
    assert capsys.readouterr().out.strip() == str(site_dir.resolve() / "index.html")
    index = (site_dir / "index.html").read_text()
    runs = sorted(p.name for p in root.iterdir() if p.is_dir())
    hrefs = [h for h in refs(index).hrefs]
    assert sorted(hrefs) == sorted(f"{name}/report.html" for name in runs)
    assert hrefs[0] == "empty-20260114T090000Z/report.html"  # newest first
    assert "ab led in both like-for-like comparisons beyond the noise" in index and "2026-01-10 09:00 UTC" in index
    for name in runs:
        report = site_dir / name / "report.html"
        for href in (h for h in refs(report.read_text()).hrefs if not h.startswith("#")):
            assert (report.parent / unquote(href)).exists(), href
    assert (site_dir / "study-20260110T090000Z" / "raw" / "ab-c10-ka-rep1" / "2.3-keepalive.csv").is_file()
    assert not (root / "index.html").exists()  # the runs folder is left as it was


def test_publish_lists_a_run_it_cannot_render_and_says_so(root: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(run_named(root, "single-"), runs / "single-20260113T090000Z")
    shutil.copytree(run_named(root, "single-"), runs / "cut-20260115T090000Z")
    damaged = runs / "cut-20260115T090000Z" / "results.jsonl"
    damaged.write_text("{not json\n" + damaged.read_text())  # a damaged line before a whole one
    (runs / "notes").mkdir()  # not a run: ignored
    assert main(["publish", str(runs), "--site", str(tmp_path / "site")]) == 1
    err = capsys.readouterr().err
    assert f"not rendered: cut-20260115T090000Z: {damaged}:1: not a result record" in err
    assert main(["publish", str(runs)]) == 2  # in place, a site would hold raw files and paths
    assert "give the site's folder with --site" in capsys.readouterr().err
    assert main(["publish", str(runs), "--with-raw", "--no-redact"]) == 1  # in place, as it is
    err = capsys.readouterr().err
    assert "not rendered: cut-20260115T090000Z:" in err
    index = (runs / "index.html").read_text()
    assert "not rendered" in index and "single-20260113T090000Z/report.html" in index
    assert (runs / "single-20260113T090000Z" / "report.html").is_file()
    with pytest.raises(ToolbenchError, match="no run folders"):
        site.publish(runs / "notes")
