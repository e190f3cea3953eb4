"""`publish` and `export` of a folder of runs from anyone: one bad run is named in one line, with
why, and the rest is built; no link in a run is followed into the site; no raw file is served as
a page of the site; no run's name becomes a script or off-site link; and `publish --site` never
replaces or removes what it did not make there."""
from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest

from toolbench.cli.main import main
from toolbench.record import store

RUNS = Path(__file__).parents[1] / "fixtures" / "runs"
SECRET = "the contents of a file outside the run"
CELL = "ab-c10-ka-rep1"
BOMB = ("a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"
        + "".join(f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n" for p, n in zip("abcdef", "bcdefg"))
        + "stop: {duration: *g}\n")
NOT_FOLLOWED = "is a symbolic link; toolbench never follows a link in a run folder (it may lead out of it)"


def copy(name: str, to: Path) -> Path:
    return Path(shutil.copytree(RUNS / "pair-a", to / name))


def edit_manifest(run: Path, change) -> None:
    data = json.loads((run / store.MANIFEST).read_text())
    change(data)
    (run / store.MANIFEST).write_text(json.dumps(data))


def edit_results(run: Path, change) -> None:
    records = [json.loads(line) for line in (run / store.RESULTS).read_text().splitlines()]
    for n, record in enumerate(records):
        change(n, record)
    (run / store.RESULTS).write_text("".join(json.dumps(r) + "\n" for r in records))


def hrefs(page: Path) -> list[str]:
    return re.findall(r'href="([^"#][^"]*)"', page.read_text())


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """Two good runs (one whose tool variant reads as mathtext) and four bad ones."""
    runs = tmp_path / "runs"
    copy("good", runs)
    edit_results(copy("dollars", runs),
                 lambda n, r: r["identity"].update(variant="$$$$" if n % 2 else r"$\frac{1}{2}$"))
    (copy("bad-json", runs) / store.MANIFEST).write_text('{"scenario": {"name": ')
    edit_manifest(copy("wrong-type", runs), lambda d: d.update(environment={"argv": 5}))
    edit_results(copy("bad-results", runs), lambda n, r: r.update(notes=5) if n == 1 else None)
    edit_manifest(copy("bomb", runs), lambda d: d["scenario"].update(text=BOMB))
    return runs


def test_one_bad_run_is_named_with_why_and_the_rest_is_published(mixed, tmp_path, capsys):
    site = tmp_path / "site"
    assert main(["publish", str(mixed), "--site", str(site)]) == 1
    err = capsys.readouterr().err
    problems = [line for line in err.splitlines() if line.startswith("toolbench: warning: not rendered: ")]
    assert len(problems) == 4 and len(err.splitlines()) == 4, err
    said = {line.split(": ")[3]: line for line in problems}
    assert f"{mixed / 'bad-json' / store.MANIFEST}: unreadable" in said["bad-json"]
    assert "manifest.environment.argv: expected a list, got int" in said["wrong-type"]
    assert f"{site / 'bad-results' / store.RESULTS}:2: RunResult.notes: expected a list" in said["bad-results"]
    assert "scenario.text: its aliases expand past" in said["bomb"]
    assert sorted(h for h in hrefs(site / "index.html")) == ["dollars/report.html", "good/report.html"]
    assert "$$$$" in (site / "dollars" / "report.html").read_text()
    assert (site / "index.html").stat().st_size < 1_000_000  # nothing expanded into it


def test_export_leaves_out_a_run_whose_results_do_not_read_and_says_why(mixed, tmp_path, capsys):
    out = tmp_path / "all.csv"
    assert main(["export", str(mixed), "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"toolbench: note: left out: {mixed / 'bad-results' / store.RESULTS}:2: "
                      "RunResult.notes: expected a list, got int") and err[1:] == [str(out)]
    with open(out) as fh:
        runs = {row["run"] for row in csv.DictReader(fh)}
    assert runs == {"good", "dollars", "bad-json", "wrong-type", "bomb"}  # export reads the results only


def test_with_raw_no_link_is_followed_and_no_raw_file_is_served_as_a_page(tmp_path, capsys):
    runs = tmp_path / "runs"
    run = copy("pair-a", runs)
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key.txt").write_text(SECRET)
    raw = run / store.RAW / CELL
    (raw / "linked.txt").symlink_to(tmp_path / "secret.txt")
    (raw / "linked-folder").symlink_to(tmp_path / "secrets")
    (raw / "page.html").write_text("<script>alert(document.cookie)</script>")
    (raw / "picture.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
    edit_results(run, lambda n, r: r["outcome"]["artifacts"].append({"role": "page", "path": f"raw/{CELL}/page.html"})
                 if r["identity"]["cell_id"] == CELL else None)
    shutil.copytree(run, tmp_path / "elsewhere", symlinks=True)
    (runs / "linked-run").symlink_to(tmp_path / "elsewhere")  # a run folder that is a link
    site = tmp_path / "site"
    assert main(["publish", str(runs), "--site", str(site), "--with-raw"]) == 0
    for path in site.rglob("*"):
        assert path.is_dir() or (SECRET not in path.read_text() and not path.is_symlink()), path
        assert path.suffix.lower() not in (".svg", ".xml") and not (path.suffix == ".html" and store.RAW in
                                                                    path.relative_to(site).parts), path
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"toolbench: note: {runs / 'linked-run'}: a symbolic link to a run folder; left out (give the folder it "
        "leads to)",
        f"toolbench: note: pair-a: 2 symbolic links left out of the site (a link may lead out of the run): "
        f"raw/{CELL}/linked-folder, raw/{CELL}/linked.txt",
        f"toolbench: note: pair-a: 2 raw files published as text, .txt added to the name (a browser would open such "
        f"a file as a page of the site): raw/{CELL}/page.html, raw/{CELL}/picture.svg"]
    copied = site / "pair-a" / store.RAW / CELL
    plain = [p.name for p in raw.iterdir() if not p.is_symlink()]
    assert sorted(p.name for p in copied.iterdir()) == sorted(
        name + ".txt" if name in ("page.html", "picture.svg") else name for name in plain)
    assert not (site / "linked-run").exists()
    report = site / "pair-a" / "report.html"
    assert f"raw/{CELL}/page.html.txt" in hrefs(report)
    assert all((report.parent / unquote(h)).is_file() for h in hrefs(report) if h != "./")
    # In place, the site would be the runs' folder itself, serving the page as it is: refused.
    assert main(["publish", str(runs), "--with-raw", "--no-redact"]) == 2
    assert capsys.readouterr().err == (f"toolbench: note: {runs / 'linked-run'}: a symbolic link to a run folder; "
                                       "left out (give the folder it leads to)\n"
                                       f"toolbench: error: {raw / 'page.html'}: in place, the site would serve this "
                                       "raw file as a page; publish with --site DIR, which copies such files as text\n")
    assert not (run / "report.html").exists() and not (runs / "index.html").exists()


def test_a_run_named_like_a_script_gets_a_link_to_its_folder_only(tmp_path, capsys):
    runs = tmp_path / "runs"
    copy("javascript:alert(1)", runs)
    copy("pair-b", runs)
    site = tmp_path / "site"
    assert main(["publish", str(runs), "--site", str(site), "--compare", "javascript:alert(1)", "pair-b"]) == 0
    links = hrefs(site / "index.html")
    assert sorted(links) == ["compare-javascript%3Aalert%281%29-vs-pair-b.html",
                             "javascript%3Aalert%281%29/report.html", "pair-b/report.html"]
    for page in site.rglob("*.html"):
        for href in hrefs(page):
            assert ":" not in href and not href.startswith("/"), (page, href)
            assert (page.parent / unquote(href)).exists(), (page, href)


def test_publish_never_replaces_nor_removes_what_it_did_not_make(tmp_path, capsys):
    runs = tmp_path / "runs"
    copy("pair-a", runs)
    site = tmp_path / "site"
    # A folder of the user's that has a run's name, shaped like a published run.
    (site / "pair-a" / "raw").mkdir(parents=True)
    (site / "pair-a" / "manifest.json").write_text("mine")
    (site / "pair-a" / "raw" / "keep.txt").write_text("mine")
    assert main(["publish", str(runs), "--site", str(site)]) == 1
    assert capsys.readouterr().err == (f"toolbench: error: {site.resolve() / 'pair-a'}: not made by toolbench "
                                       "publish (not in .toolbench-site.json); refusing to replace it: publish into "
                                       "another --site, or move it away\n")
    assert (site / "pair-a" / "manifest.json").read_text() == "mine" and (site / "pair-a" / "raw" / "keep.txt").exists()
    assert sorted(p.name for p in site.iterdir()) == ["pair-a"]
    shutil.rmtree(site / "pair-a")
    (site / "index.html").write_text("mine")
    assert main(["publish", str(runs), "--site", str(site)]) == 1
    assert "index.html: not made by toolbench publish" in capsys.readouterr().err
    assert (site / "index.html").read_text() == "mine" and sorted(p.name for p in site.iterdir()) == ["index.html"]
    (site / "index.html").rename(site / "CNAME")  # what the user keeps beside the site: left as it is
    assert main(["publish", str(runs), "--site", str(site), "--with-raw"]) == 0
    (site / "pair-a" / "raw" / "notes.txt").write_text("mine")  # added by the user after
    assert main(["publish", str(runs), "--site", str(site)]) == 0  # without raw files: publish's own go
    assert [p.name for p in (site / "pair-a" / "raw").rglob("*")] == ["notes.txt"]
    assert (site / "CNAME").read_text() == "mine"
