"""`toolbench publish` is safe by default: no raw files unless --with-raw, no absolute path and no
host name in anything copied or rendered unless --no-redact; its index tells runs apart, marks
the failed and interrupted ones, states each run's size and links the comparison pages."""
from __future__ import annotations

import json
import re
import shutil
import socket
from pathlib import Path
from urllib.parse import unquote

import pytest

from toolbench.cli.main import main

RUNS = Path(__file__).parents[1] / "fixtures" / "runs"
HOSTNAME = "bench-7.lab.example"  # put in one run's manifest, as a run on another machine would have it


@pytest.fixture()
def runs(tmp_path: Path) -> Path:
    """Recorded runs (complete, interrupted, every cell failed), one of them from a host named HOSTNAME
    started from a folder under tmp_path; the others keep the host (`vm`) and paths they were made with."""
    folder = tmp_path / "runs"
    for name in ("pair-a", "interrupted", "all-failed"):
        shutil.copytree(RUNS / name, folder / name)
    manifest = folder / "pair-a" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["environment"]["hostname"] = HOSTNAME
    data["environment"]["argv"] = [f"{tmp_path}/venv/bin/toolbench", "run", f"{tmp_path}/q.yaml", "--reports-dir",
                                   str(folder)]
    manifest.write_text(json.dumps(data))
    return folder


def site_texts(site: Path) -> dict[Path, str]:
    return {p: p.read_bytes().decode("utf-8", "replace") for p in site.rglob("*") if p.is_file()}


def absolute_paths(text: str) -> list[str]:
    """What looks like an absolute path on this machine: a known top folder then more."""
    return re.findall(r"(?<![\w:/.-])/(?:work|tmp|root|home|usr|opt|srv|var)/[\w.-]+", text)


def test_a_site_has_no_raw_files_no_paths_and_no_host_names(runs: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    assert main(["publish", str(runs), "--site", str(site), "--compare", "pair-a", "interrupted"]) == 0
    assert capsys.readouterr().out.strip() == str(site.resolve() / "index.html")
    texts = site_texts(site)
    assert not [p for p in texts if "raw" in p.relative_to(site).parts]
    names = [HOSTNAME, "bench-7", "vm", socket.gethostname()]
    for path, text in texts.items():
        assert absolute_paths(text) == [], path
        assert str(tmp_path) not in text and "/work/" not in text, path
        for name in names:
            assert not re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)", text, re.IGNORECASE), (path, name)
    manifest = json.loads((site / "pair-a" / "manifest.json").read_text())
    assert manifest["environment"]["hostname"] == "[host]"
    assert manifest["environment"]["argv"][0] == "…/toolbench" and manifest["scenario"]["source"] == "…/quickstart.yaml"
    # every link of every page leads to a file of the site: nothing points at raw files left out
    for path, text in texts.items():
        if path.suffix == ".html":
            for href in re.findall(r'href="([^"#]+)"', text):
                assert (path.parent / unquote(href)).exists(), (path, href)
    assert "[host]" in texts[site / "pair-a" / "report.html"]
    assert (runs / "pair-a" / "raw").is_dir() and HOSTNAME in (runs / "pair-a" / "manifest.json").read_text()


def test_the_index_names_marks_and_sizes_every_run(runs: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    assert main(["publish", str(runs), "--site", str(site), "--compare", "pair-a", "interrupted"]) == 0
    index = (site / "index.html").read_text()
    rows = {re.search(r'<a href="([^"]+)/report.html">', row).group(1): row
            for row in re.findall(r"<tr.*?</tr>", index, re.S) if "report.html" in row}
    assert sorted(rows) == ["all-failed", "interrupted", "pair-a"]  # each run by its own folder's name
    assert 'class="bad"' in rows["interrupted"] and "interrupted" in rows["interrupted"]
    assert 'class="bad"' in rows["all-failed"] and "no cell ok" in rows["all-failed"]
    assert 'class="bad"' not in rows["pair-a"] and "complete" in rows["pair-a"]
    for name, row in rows.items():
        size = sum(p.stat().st_size for p in (site / name).rglob("*") if p.is_file())
        shown = re.search(r'<td class="num nowrap">([^<]+)</td>', row).group(1)
        assert shown.endswith(("KiB", "MiB", "B")) and shown.split()[0].replace(",", "").replace(".", "").isdigit()
        assert abs(float(shown.split()[0]) * 1024 - size) < 0.1 * size, (name, shown, size)
    assert '<a href="compare-pair-a-vs-interrupted.html">pair-a vs interrupted</a>' in index
    compare = (site / "compare-pair-a-vs-interrupted.html").read_text()
    assert "pair-a/manifest.json" in compare and "interrupted/manifest.json" in compare
    code = main(["publish", str(runs), "--site", str(site), "--compare", "pair-a", "nope"])
    assert code == 2 and "--compare pair-a nope: no run 'nope'" in capsys.readouterr().err


def test_with_raw_copies_the_raw_files_redacted_and_no_redact_keeps_them(runs: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    assert main(["publish", str(runs), "--site", str(site), "--with-raw"]) == 0
    commands = sorted((site / "pair-a" / "raw").glob("*/command.txt"))
    assert commands and len(commands) == len(list((runs / "pair-a" / "raw").glob("*/command.txt")))
    with_paths = [c for c in commands if "/work/" in (runs / "pair-a" / c.relative_to(site / "pair-a")).read_text()]
    assert with_paths  # the engine's commands start the Python of the checkout that ran them
    for command in commands:
        assert not absolute_paths(command.read_text())
    assert all("…/python" in c.read_text() for c in with_paths)
    report = (site / "pair-a" / "report.html").read_text()
    assert 'href="raw/' in report  # the raw links are back, and lead to the copies
    # published again without: the raw folders go
    assert main(["publish", str(runs), "--site", str(site)]) == 0
    assert not (site / "pair-a" / "raw").exists()
    assert main(["publish", str(runs), "--site", str(tmp_path / "open"), "--no-redact"]) == 0
    assert json.loads((tmp_path / "open" / "pair-a" / "manifest.json").read_text())["environment"]["hostname"] == HOSTNAME


def test_a_published_run_keeps_its_claims_and_its_report_opens_with_them(runs: Path, tmp_path: Path) -> None:
    from toolbench.scenario.claims import Claim, ClaimSet, save
    save(runs / "pair-a", ClaimSet((Claim("Keep-alive <helps> a lot"),), f"{tmp_path}/study.yaml"))
    site = tmp_path / "site"
    assert main(["publish", str(runs), "--site", str(site)]) == 0
    stored = json.loads((site / "pair-a" / "claims.json").read_text())
    assert [c["claim"] for c in stored["claims"]] == ["Keep-alive <helps> a lot"]
    assert str(tmp_path) not in json.dumps(stored)  # its source path redacted as the manifest's
    html = (site / "pair-a" / "report.html").read_text()
    assert "Keep-alive &lt;helps&gt; a lot" in html and 'id="claims"' in html
    assert not (site / "interrupted" / "claims.json").exists()  # a run without claims has none to copy
