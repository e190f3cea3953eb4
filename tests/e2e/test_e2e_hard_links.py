"""A run folder from anyone, holding hard links: files of the run that are other names of files
outside it. `run --resume` (which repairs, appends to and locks the run's records), `report`
and `publish --with-raw` leave every outside file as it was, byte for byte, and the site gets no
copy of one. The stored run is real: the CLI ran it against a port where nothing listens, so its
one cell failed fast and is finished."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.survival import TOOLBENCH
from toolbench.hosts import lifeline
from toolbench.record import store

SCENARIO = """\
name: hardlinks
target: {url: "http://127.0.0.1:9/", ready: {timeout: 0.2s}}
matrix: {tool: [engine], concurrency: [1]}
stop: {duration: 1s}
cooldown: 0s
probe: {enabled: false}
"""
PRECIOUS = b"someone else's file: toolbench must not touch it\n"
RESUMED = 3  # a resume that ran nothing: the stored cell failed (README, "Exit codes")


def toolbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOLBENCH, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("stored")
    scenario = folder / "s.yaml"
    scenario.write_text(SCENARIO)
    made = toolbench("run", str(scenario), "--reports-dir", str(folder / "r"), "-q", "--no-progress")
    (run,) = (folder / "r").iterdir()
    assert made.returncode == RESUMED and (run / store.RESULTS).is_file(), made.stderr
    return scenario, run


def plant(run: Path, outside: Path, names: list[str], torn: bool = False) -> dict[Path, bytes]:
    """Each name made another name of a file of its own in `outside` (a copy of the run's file, or
    PRECIOUS): what each outside file holds, to compare after."""
    outside.mkdir(exist_ok=True)
    kept = {}
    for n, name in enumerate(names):
        where = run / name
        data = where.read_bytes() if where.is_file() else PRECIOUS
        if torn and name == store.RESULTS:
            data += b'{"schema_version": 4, "iden'  # a last record a crash cut short: resume cuts it
        target = outside / f"{n}-{where.name}"
        target.write_bytes(data)
        where.unlink(missing_ok=True)
        os.link(target, where)
        kept[target] = data
    return kept


def test_resume_report_and_publish_never_change_nor_copy_a_file_outside_the_run(stored, tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    run = reports / stored[1].name
    shutil.copytree(stored[1], run)
    cell = run / store.RAW / "engine-c1-ka-rep1"  # the tool's output, as a cell that reached its target keeps it
    cell.mkdir(exist_ok=True)
    for name in ("stdout.txt", "stderr.txt", "own.txt"):
        (cell / name).write_bytes(b"the run's own output\n")
    raw = [f"{store.RAW}/{cell.name}/stdout.txt", f"{store.RAW}/{cell.name}/stderr.txt"]
    outside = plant(run, tmp_path / "outside", [store.RESULTS, lifeline.LEDGER, store.LOCK, store.TORN,
                                                store.MANIFEST, "report.html", *raw], torn=True)

    resumed = toolbench("run", str(stored[0]), "--resume", str(run), "--no-progress")
    assert resumed.returncode == RESUMED, resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert {path: path.read_bytes() for path in outside} == outside
    assert (run / store.TORN).read_bytes().endswith(b'{"schema_version": 4, "iden\n')  # the run's own copy

    outside |= plant(run, tmp_path / "again", [store.RESULTS, "report.html"])
    reported = toolbench("report", str(run))
    assert reported.returncode == 0, reported.stderr
    assert {path: path.read_bytes() for path in outside} == outside
    assert (run / "report.html").read_bytes().startswith(b"<!DOCTYPE html>")

    site = tmp_path / "site"
    published = toolbench("publish", str(reports), "--site", str(site), "--with-raw")
    assert published.returncode == 0, published.stderr
    assert {path: path.read_bytes() for path in outside} == outside
    copied = [p for p in site.rglob("*") if p.is_file()]
    assert (site / run.name / store.RAW / cell.name / "own.txt").is_file()
    assert not [p for p in copied if p.name in {Path(r).name for r in raw} | {store.RESULTS}]
    assert not [p for p in copied if PRECIOUS in p.read_bytes()]
    said = [line for line in published.stderr.splitlines() if "hard-linked file" in line]
    assert len(said) == 1 and "left out of the site" in said[0] and f"raw/{cell.name}/" in said[0], published.stderr
