"""A folder of runs as a static site: every run's report and records, an index page, and any
comparison pages asked for. Any static web host serves the result as it is: every link is
relative.

Safe by default: a run's raw files (the tools' own output, configs, logs) are copied only when
asked (`with_raw`), and every text copied or rendered has its secrets (credential headers, URL
tokens, SSH users and keys: toolbench.report.secrets), absolute paths and the host's name taken
out (toolbench.report.redact) unless `redact=False`. A site is never built in the runs'
own folder then, since that would mean deleting or rewriting the runs themselves."""
from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence
from urllib.parse import quote

from toolbench.errors import Notice, ToolbenchError, UsageError
from toolbench.record import runfiles, store
from toolbench.record.manifest import RunStatus
from toolbench.report import fmt, render, secrets
from toolbench.report.model import ReportData
from toolbench.report.redact import Redactor
from toolbench.report.site_files import (MARKER, RAW_FOLDERS, RECORDS, SKIPPED_FILES, Site, copy_run, folder_size,
                                         page_in_place)
from toolbench.report.view import IndexEntry, Link

__all__ = ["RAW_FOLDERS", "RECORDS", "SKIPPED_FILES", "Published", "find_runs", "folder_size", "publish"]
INDEX = "index.html"


@dataclass(frozen=True)
class Published:
    index: Path
    reports: tuple[Path, ...]
    problems: tuple[str, ...]  # runs that could not be rendered, each with its reason


def find_runs(runs_dir: Path) -> list[Path]:
    """The run folders in runs_dir; one that is a link is left out, and a notice says so."""
    if not runs_dir.is_dir():
        raise ToolbenchError(f"{runs_dir}: no such folder")
    runs, skipped = store.runs_in(runs_dir)
    for said in skipped:
        warnings.warn(Notice(said), stacklevel=2)
    return runs


def publish(runs_dir: Path, site: Path | None = None, *, with_raw: bool = False, redact: bool = True,
            compare: Sequence[tuple[str, str]] = (), private_addresses: bool = False) -> Published:
    """Renders every run below runs_dir into site and writes site/index.html. In place (no site)
    only with the raw files and without redaction: nothing of a run is ever deleted or rewritten.
    Into a site's folder, only what publish wrote there before is replaced (site_files.Site)."""
    runs = find_runs(runs_dir)
    if not runs:
        raise ToolbenchError(f"{runs_dir}: no run folders (folders with a {store.MANIFEST})")
    site = (site or runs_dir).resolve()
    in_place = site == runs_dir.resolve()
    _check(runs_dir, runs, site, in_place, redact, with_raw, compare)
    pages = [INDEX] + [_compare_name(pair) for pair in compare]
    owned = None if in_place else _site(site, [run.name for run in runs] + pages)
    entries, reports, problems = [], [], []
    redactors: dict[str, Redactor | None] = {}
    for run in runs:
        target = run if in_place else site / run.name
        try:
            redactor = redactors[run.name] = _redactor(run, private_addresses) if redact else None
            if owned is not None:
                copy_run(run, owned, run.name, with_raw=with_raw, redactor=redactor)
            output, data = render.render_with_data([target])
            if redactor is not None and owned is not None:
                _redact_page(owned, output, [redactor])
        except (ToolbenchError, OSError) as exc:
            problems.append(f"{run.name}: {_one_line(exc)}")
            entries.append(_entry_broken(run, _one_line(exc)))
            continue
        reports.append(output)
        entries.append(_entry(target, output, site, data))
    compares = [_compare(site, pair, owned, [r for name in pair if (r := redactors.get(name)) is not None])
                for pair in compare]
    entries.sort(key=lambda e: e.sort_date, reverse=True)
    render.write(site / INDEX, render.page("index.html.j2", entries=entries, compares=compares, with_raw=with_raw,
                                           redacted=redact, title=f"toolbench runs: {runs_dir.name}"))
    _redact_page(owned, site / INDEX, [r for r in redactors.values() if r is not None])
    return Published(site / INDEX, tuple(reports), tuple(problems))


def _check(runs_dir: Path, runs: list[Path], site: Path, in_place: bool, redact: bool, with_raw: bool,
           compare: Sequence[tuple[str, str]]) -> None:
    if in_place and (redact or not with_raw):
        raise UsageError(f"{runs_dir}: give the site's folder with --site: in place, the runs' raw files and "
                         "paths cannot be left out (or publish in place with --with-raw --no-redact)")
    for run in runs:
        if site.is_relative_to(run.resolve()):
            raise ToolbenchError(f"{site}: the site cannot be inside the run folder {run}")
        page = page_in_place(run) if in_place else None
        if page is not None:
            raise UsageError(f"{run / page}: in place, the site would serve this raw file as a page; publish "
                             "with --site DIR, which copies such files as text")
    names = {run.name for run in runs}
    taken = names & {INDEX, MARKER, *(_compare_name(pair) for pair in compare)}
    if taken:
        raise ToolbenchError(f"{runs_dir / sorted(taken)[0]}: a run folder named like a page of the site; rename it")
    for pair in compare:
        unknown = [name for name in pair if name not in names]
        if unknown:
            raise UsageError(f"--compare {' '.join(pair)}: no run {unknown[0]!r} in {runs_dir}")


def _site(site: Path, top: list[str]) -> Site:
    """The site's folder, once each top-level name publish writes is either its own or free:
    nothing is written when one is not."""
    site.mkdir(parents=True, exist_ok=True)
    owned = Site.open(site)
    for name in top:
        owned.claim(name)
    owned.save()
    return owned


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _redactor(run: Path, private_addresses: bool) -> Redactor:
    """This machine's names and the one the run's manifest gives for where it ran, and the
    secrets the run's manifest (its scenario text, its hosts) names."""
    hostname = store.RunDir.open(run).manifest().environment.hostname
    try:
        found = secrets.of_manifest(json.loads(runfiles.read_text(run, store.MANIFEST)))
    except ValueError:
        found = secrets.Secrets()  # the typed read above has said what a manifest lacks
    return Redactor.for_this_host(hostname, secrets=found, private_addresses=private_addresses)


def _redact_page(site: Site | None, page: Path, redactors: list[Redactor]) -> None:
    """A rendered page, its secrets taken out again: the records it came from were redacted,
    and this holds whatever a section may show of them."""
    if site is None or not redactors:
        return
    relative = page.relative_to(site.root).as_posix()
    with runfiles.reader(site.root, relative) as fh:
        data = fh.read()
    for redactor in redactors:
        data = redactor.page(data)
    site.write(relative, data)


def _href(path: Path, base: Path) -> str:
    """A link relative to the page, each part quoted: a folder's name (`javascript:...`) never
    becomes a scheme or a host."""
    return quote(Path(os.path.relpath(path, base)).as_posix())


def _entry(run: Path, output: Path, site: Path, data: ReportData) -> IndexEntry:
    manifest = store.RunDir.open(run).manifest()
    started = manifest.started_at or ""
    cells = sum(s.cells for s in data.statuses)
    ok = sum(s.cells for s in data.statuses if s.status == "ok")
    headline = data.glance.headline  # the report's own answer, at most two sentences
    bad = manifest.status in (RunStatus.FAILED, RunStatus.INTERRUPTED) or (cells > 0 and ok == 0)
    status = manifest.status.value + (" (no cell ok)" if cells and not ok else "")
    return IndexEntry(title=run.name, href=_href(output, site), date=fmt.when(started),
                      scenario=data.title, status=status, cells=f"{ok} of {cells} ok", headline=headline,
                      sort_date=started, bad=bad, size=fmt.size(folder_size(run)))


def _entry_broken(run: Path, reason: str) -> IndexEntry:
    return IndexEntry(title=run.name, href="", date=fmt.ABSENT, scenario=fmt.ABSENT, status="not rendered",
                      cells=fmt.ABSENT, headline=reason, sort_date="", bad=True, size=fmt.ABSENT)


def _compare_name(pair: tuple[str, str]) -> str:
    return f"compare-{pair[0]}-vs-{pair[1]}.html"


def _compare(site: Path, pair: tuple[str, str], owned: Site | None, redactors: list[Redactor]) -> Link:
    output = site / _compare_name(pair)
    render.render_runs([site / pair[0], site / pair[1]], output)
    _redact_page(owned, output, redactors)
    return Link(f"{pair[0]} vs {pair[1]}", quote(output.name))
