"""`report` of a run folder from anyone: it never writes through a link planted under its
temporary file's name, reads no record that is a link, links only to the run's own files
(never a `javascript:` or off-site link, whatever path a record names), draws a label in
dollars as it is (never as mathtext), and refuses a stored scenario text whose YAML aliases
would expand without bound."""
from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from urllib.parse import unquote

import pytest

from toolbench.cli.main import main
from toolbench.errors import StoreError
from toolbench.record import store
from toolbench.report import charts, render

RUNS = Path(__file__).parents[1] / "fixtures" / "runs"
PRECIOUS = b"someone else's file: toolbench must not touch it\n"
# 293 bytes that stand for 9**7 (4.8 million) strings once the aliases are expanded.
BOMB = ("a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"
        + "".join(f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n" for p, n in zip("abcdef", "bcdefg"))
        + "stop: {duration: *g}\n")


@pytest.fixture
def run(tmp_path: Path) -> Path:
    copy = tmp_path / "pair-a"
    shutil.copytree(RUNS / "pair-a", copy)
    return copy


def rewrite_results(run: Path, change) -> None:
    lines = [json.loads(line) for line in (run / store.RESULTS).read_text().splitlines()]
    for n, record in enumerate(lines):
        change(n, record)
    (run / store.RESULTS).write_text("".join(json.dumps(r) + "\n" for r in lines))


def test_report_never_writes_through_a_link_planted_as_its_temporary_file(run, tmp_path,
                                                                          capsys: pytest.CaptureFixture[str]):
    outside = tmp_path / "outside.html"
    outside.write_bytes(PRECIOUS)
    (run / "report.html.tmp").symlink_to(outside)
    assert main(["report", str(run)]) == 0
    assert capsys.readouterr().out.strip() == str(run / "report.html")
    assert outside.read_bytes() == PRECIOUS
    assert (run / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_report_reads_no_record_that_is_a_link(run, tmp_path, capsys: pytest.CaptureFixture[str]):
    elsewhere = tmp_path / "elsewhere.json"
    shutil.move(run / store.MANIFEST, elsewhere)
    (run / store.MANIFEST).symlink_to(elsewhere)
    assert main(["report", str(run)]) == 1
    assert capsys.readouterr().err == (f"toolbench: error: {run / store.MANIFEST}: is a symbolic link; toolbench "
                                       "never follows a link in a run folder (it may lead out of it)\n")
    assert not (run / "report.html").exists()


HOSTILE = ["//evil.example/x", "/etc/passwd", "../../elsewhere/x", "javascript:alert(1)", " javascript:alert(2)",
           "java\tscript:alert(3)", "http://evil.example/y", "\\\\evil.example\\z"]


def test_a_report_links_only_to_the_runs_own_files(run, tmp_path):
    def hostile(n: int, record: dict) -> None:
        if n == 0:
            record["outcome"]["artifacts"] += [{"role": f"bad{i}", "path": p} for i, p in enumerate(HOSTILE)]

    rewrite_results(run, hostile)
    page = render.render_run(run).read_text()
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs and not [h for h in hrefs if ":" in h or h.startswith(("/", "\\")) or "evil" in h or ".." in h]
    for href in (h for h in hrefs if not h.startswith("#")):
        assert (run / unquote(href)).exists(), href  # each a file of the run
    assert ">bad0<" not in page and ">stdout<" in page  # the hostile paths get no link; the run's own do


def test_a_label_in_dollars_is_drawn_as_it_is_never_as_mathtext():
    lines = [charts.Line("$$$$", [1, 2], [1, 2]), charts.Line(r"$\frac{1}{2}$", [1, 2], [2, 3])]
    svg = charts.line_chart("c", lines, charts.Axes("x in $", "y"), "alt", title="$x^2$")
    for text in ("$$$$", r"$\frac{1}{2}$", "x in $", "$x^2$"):
        assert f">{text}<" in svg or text in re.sub(r"<[^>]+>", "", svg), text


def test_a_run_whose_variant_reads_as_mathtext_renders(run):
    def dollars(n: int, record: dict) -> None:
        record["identity"]["variant"] = "$$$$" if n % 2 else r"$\frac{1}{2}$"

    rewrite_results(run, dollars)
    page = render.render_run(run).read_text()
    assert "$$$$" in page and r"$\frac{1}{2}$" in page


@pytest.mark.parametrize("version", [1, 3])
def test_a_stored_scenario_text_that_would_expand_without_bound_is_refused(run, version):
    # Version 1 kept the description only in that text (record.migrate reads it); 3 is read by the report.
    assert len(BOMB) < 300
    data = json.loads((run / store.MANIFEST).read_text())
    data["scenario"]["text"] = BOMB
    if version == 3:
        del data["toolbench_manifest"]
        data.update(manifest_version=3, scenario={**data["scenario"], "description": ""}, targets=[], tools=[],
                    resumed=[], generators=[])
        data.pop("target", None)
    (run / store.MANIFEST).write_text(json.dumps(data))
    began = time.monotonic()
    said = (f"{run / store.MANIFEST}: scenario.text" if version == 1 else f"pair-a: the scenario text in its "
            f"{store.MANIFEST}")
    with pytest.raises(StoreError, match=re.escape(f"{said}: its aliases expand past ") + r"\d+ nodes; refusing"):
        render.render_run(run)
    assert time.monotonic() - began < 60
    data["scenario"]["text"] = "base: &b {duration: 3s}\nstop: *b\n"  # an alias of a real scenario's size
    (run / store.MANIFEST).write_text(json.dumps(data))
    assert "duration 3s" in render.render_run(run).read_text()
