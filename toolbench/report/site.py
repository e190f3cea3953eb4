"""A folder of runs as a static site: every run's report and records, an index page, and any
comparison pages asked for. Any static web host serves the result as it is: every link is
relative.

Safe by default: a run's raw files (the tools' own output, configs, logs) are copied only when
asked (`with_raw`), and every text copied or rendered has its absolute paths and the host's
name taken out (toolbench.report.redact) unless `redact=False`. A site is never built in the runs'
own folder then, since that would mean deleting or rewriting the runs themselves."""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from toolbench.errors import StoreError, ToolbenchError, UsageError
from toolbench.record import store
from toolbench.record.manifest import RunStatus
from toolbench.report import fmt, render
from toolbench.report.model import ReportData
from toolbench.report.redact import Redactor
from toolbench.report.view import IndexEntry, Link

# What a run folder holds that is never published: the old report (rendered anew), the lock and
# process ledger of the process that wrote it (pids, its host, its command line), and leftovers.
SKIPPED_FILES = ("report.html", store.LOCK, "processes.jsonl", store.RESERVE, store.TORN)
RECORDS = (store.MANIFEST, store.RESULTS)  # what a run's report is rendered from
RAW_FOLDERS = (store.RAW, "target")  # the tools' and the target's own files


@dataclass(frozen=True)
class Published:
    index: Path
    reports: tuple[Path, ...]
    problems: tuple[str, ...]  # runs that could not be rendered, each with its reason


def find_runs(runs_dir: Path) -> list[Path]:
    if not runs_dir.is_dir():
        raise ToolbenchError(f"{runs_dir}: no such folder")
    return sorted(p for p in runs_dir.iterdir() if p.is_dir() and (p / store.MANIFEST).is_file())


def publish(runs_dir: Path, site: Path | None = None, *, with_raw: bool = False, redact: bool = True,
            compare: Sequence[tuple[str, str]] = ()) -> Published:
    """Renders every run below runs_dir into site and writes site/index.html. In place (no site)
    only with the raw files and without redaction: nothing of a run is ever deleted or rewritten."""
    runs = find_runs(runs_dir)
    if not runs:
        raise ToolbenchError(f"{runs_dir}: no run folders (folders with a {store.MANIFEST})")
    site = (site or runs_dir).resolve()
    in_place = site == runs_dir.resolve()
    if in_place and (redact or not with_raw):
        raise UsageError(f"{runs_dir}: give the site's folder with --site: in place, the runs' raw files and "
                         "paths cannot be left out (or publish in place with --with-raw --no-redact)")
    for run in runs:
        if site.is_relative_to(run.resolve()):
            raise ToolbenchError(f"{site}: the site cannot be inside the run folder {run}")
    names = {run.name for run in runs}
    for pair in compare:
        unknown = [name for name in pair if name not in names]
        if unknown:
            raise UsageError(f"--compare {' '.join(pair)}: no run {unknown[0]!r} in {runs_dir}")
    entries, reports, problems = [], [], []
    for run in runs:
        target = run if in_place else site / run.name
        try:
            if not in_place:
                copy_run(run, target, with_raw=with_raw, redactor=_redactor(run) if redact else None)
            output, data = render.render_with_data([target])
        except (ToolbenchError, OSError) as exc:
            problems.append(f"{run.name}: {exc}")
            entries.append(_entry_broken(run, str(exc)))
            continue
        reports.append(output)
        entries.append(_entry(target, output, site, data))
    compares = [_compare(site, pair) for pair in compare]
    entries.sort(key=lambda e: e.sort_date, reverse=True)
    index = site / "index.html"
    render.write(index, render.page("index.html.j2", entries=entries, compares=compares, with_raw=with_raw,
                                    redacted=redact, title=f"toolbench runs: {runs_dir.name}"))
    return Published(index, tuple(reports), tuple(problems))


def _redactor(run: Path) -> Redactor:
    """This machine's names and the one the run's manifest gives for where it ran."""
    return Redactor.for_this_host(store.RunDir.open(run).manifest().environment.hostname)


def copy_run(source: Path, target: Path, *, with_raw: bool, redactor: Redactor | None) -> None:
    """The run's records, redacted, and with_raw its raw folders too; a raw folder left from an
    earlier publishing with raw files is removed."""
    target.mkdir(parents=True, exist_ok=True)
    for name in RECORDS:
        if (source / name).is_file():
            _copy_records(source / name, target / name, redactor)
    for folder in RAW_FOLDERS:
        if not with_raw:
            if (target / folder).is_dir() and (target / store.MANIFEST).is_file():
                shutil.rmtree(target / folder)
        elif (source / folder).is_dir():
            sync_tree(source / folder, target / folder, redactor)


def _copy_records(source: Path, target: Path, redactor: Redactor | None) -> None:
    if redactor is None:
        shutil.copy2(source, target)
        return
    if source.name == store.MANIFEST:
        data = redactor.data(json.loads(source.read_text(encoding="utf-8")))
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    else:  # results.jsonl: a record a line; a torn last line is left out, as readers skip it
        lines = [(n, line) for n, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1)
                 if line.strip()]
        records = []
        for n, line in lines:
            try:
                records.append(json.dumps(redactor.data(json.loads(line)), sort_keys=True) + "\n")
            except ValueError:
                if n != lines[-1][0]:
                    raise StoreError(f"{source}:{n}: not a result record") from None
        text = "".join(records)
    target.write_text(text, encoding="utf-8")


def _entry(run: Path, output: Path, site: Path, data: ReportData) -> IndexEntry:
    manifest = store.RunDir.open(run).manifest()
    started = manifest.started_at or ""
    cells = sum(s.cells for s in data.statuses)
    ok = sum(s.cells for s in data.statuses if s.status == "ok")
    headline = data.verdicts[0].headline if data.verdicts else ""
    bad = manifest.status in (RunStatus.FAILED, RunStatus.INTERRUPTED) or (cells > 0 and ok == 0)
    status = manifest.status.value + (" (no cell ok)" if cells and not ok else "")
    return IndexEntry(title=run.name, href=Path(os.path.relpath(output, site)).as_posix(), date=fmt.when(started),
                      scenario=data.title, status=status, cells=f"{ok} of {cells} ok", headline=headline,
                      sort_date=started, bad=bad, size=fmt.size(folder_size(run)))


def _entry_broken(run: Path, reason: str) -> IndexEntry:
    return IndexEntry(title=run.name, href="", date=fmt.ABSENT, scenario=fmt.ABSENT, status="not rendered",
                      cells=fmt.ABSENT, headline=reason, sort_date="", bad=True, size=fmt.ABSENT)


def _compare(site: Path, pair: tuple[str, str]) -> Link:
    output = site / f"compare-{pair[0]}-vs-{pair[1]}.html"
    render.render_runs([site / pair[0], site / pair[1]], output)
    return Link(f"{pair[0]} vs {pair[1]}", output.name)


def folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def sync_tree(source: Path, target: Path, redactor: Redactor | None = None) -> None:
    """Copies a folder, skipping files already copied unchanged (when not redacting), what is
    never published, and anything that is not a plain file (sockets or pipes a target server
    may have left)."""
    for folder, dirs, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        for name in files:
            src = Path(folder) / name
            if name in SKIPPED_FILES or not src.is_file() or name.endswith(".tmp"):
                continue
            dst = target / rel / name
            if redactor is not None:
                dst.write_bytes(redactor.bytes(src.read_bytes()))
                continue
            st = src.stat()
            if dst.exists() and dst.stat().st_size == st.st_size and dst.stat().st_mtime == st.st_mtime:
                continue
            shutil.copy2(src, dst)
