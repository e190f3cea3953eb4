"""What `publish --site` writes into the site's folder, and only that.

The site's folder may hold things publish did not make (a folder of the same name as a run, a
page of the user's): a list of every file and folder publish wrote there is kept beside them
(MARKER), and publish replaces or removes only what that list names; anything else in its way
is refused in one line. No write follows a link (toolbench.record.runfiles).

A run's files are copied from the run without following a link either: its raw files are listed
by runfiles.plain_files, which leaves links out (and publish says which). A raw file a browser
would open as a page or an image with scripts (.html, .svg, ...) is never served as one from
the site's origin: it is copied with `.txt` after its name, and publish says so."""
from __future__ import annotations

import json
import os
import stat
import warnings
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Iterator

from toolbench.errors import Notice, StoreError, ToolbenchError
from toolbench.record import runfiles, store
from toolbench.report.redact import Redactor
from toolbench.scenario import claims as scenario_claims

MARKER = ".toolbench-site.json"
MARKER_VERSION = 1
# What a browser runs as a document of the site's origin when a static host serves it by its suffix.
SERVED_AS_PAGE = (".html", ".htm", ".xhtml", ".xht", ".shtml", ".svg", ".svgz", ".xml", ".xsl", ".xslt",
                  ".mht", ".mhtml")
AS_TEXT = ".txt"
# What a run folder holds that is never published: the old report (rendered anew), the lock and
# process ledger of the process that wrote it (pids, its host, its command line), and leftovers.
SKIPPED_FILES = ("report.html", store.LOCK, "processes.jsonl", store.RESERVE, store.TORN,
                 "key.pem")  # a TLS target's private key (toolbench.servers.tls): never published
# What a run's report is rendered from: the study's claims too, or its published report would
# open without the table its page quotes.
RECORDS = (store.MANIFEST, store.RESULTS, scenario_claims.FILE)
RAW_FOLDERS = (store.RAW, "target")  # the tools' and the target's own files
_SHOWN = 3  # links or renamed files named in a notice; the rest counted


def served_as_page(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in SERVED_AS_PAGE


class Site:
    """The site's folder and what publish wrote there (its MARKER)."""

    def __init__(self, root: Path, owned: set[str]) -> None:
        self.root = root
        self.owned = owned

    @classmethod
    def open(cls, root: Path) -> "Site":
        path = root / MARKER
        if not os.path.lexists(path):
            return cls(root, set())
        try:
            data = json.loads(runfiles.read_text(root, MARKER))
            owned = {str(p) for p in data["written"] if isinstance(p, str)}
            if data.get("toolbench_site") != MARKER_VERSION:
                raise ValueError(f"version {data.get('toolbench_site')!r}")
        except (OSError, ValueError, KeyError, TypeError, AttributeError, StoreError) as exc:
            raise ToolbenchError(f"{path}: not a list of what publish wrote ({exc}); refusing to publish "
                                 "into this folder: give another --site") from None
        return cls(root, {p for p in owned if _inside(p)})

    def claim(self, relative: str) -> None:
        """`relative` (and each folder on its way) may be written: publish wrote it before, or
        it is not there. Anything else is refused."""
        parts = runfiles.parts_of(relative)
        for n in range(1, len(parts) + 1):
            rel = "/".join(parts[:n])
            if rel in self.owned:
                continue
            if os.path.lexists(self.root / rel):
                raise ToolbenchError(f"{self.root / rel}: not made by toolbench publish (not in {MARKER}); "
                                     "refusing to replace it: publish into another --site, or move it away")
            self.owned.add(rel)

    def save(self) -> None:
        """Saved before what it lists is written: a publish cut short leaves nothing unlisted."""
        data = {"toolbench_site": MARKER_VERSION, "written": sorted(self.owned | {MARKER})}
        runfiles.replace(self.root, MARKER, (json.dumps(data, indent=1) + "\n").encode(), follow_root=True)

    def write(self, relative: str, data: bytes | Iterable[bytes], mtime_ns: int | None = None) -> None:
        self.claim(relative)
        runfiles.replace(self.root, relative, data, mtime_ns=mtime_ns, follow_root=True)

    def remove_below(self, relative: str) -> None:
        """What publish wrote below `relative`, removed (files, then folders left empty);
        anything else there stays."""
        below = sorted((p for p in self.owned if p == relative or p.startswith(relative + "/")),
                       key=lambda p: p.count("/"), reverse=True)
        for rel in below:
            path = self.root / rel
            try:
                if path.is_symlink() or not path.is_dir():
                    path.unlink(missing_ok=True)
                else:
                    path.rmdir()
            except OSError:
                continue  # a folder holding what publish did not write: it stays, and stays listed
            self.owned.discard(rel)


def _inside(relative: str) -> bool:
    try:
        runfiles.parts_of(relative)
    except StoreError:
        return False
    return True


def copy_run(source: Path, site: Site, name: str, *, with_raw: bool, redactor: Redactor | None) -> None:
    """The run's records, redacted, and with_raw its raw folders too, into site/name; a raw folder
    left from an earlier publishing with raw files is removed."""
    plan = [(rel, rel) for rel in RECORDS if runfiles.is_plain_file(source, rel)]
    linked: list[str] = []
    shared = [rel for rel, _ in plan if runfiles.has_other_names(source, rel)]  # a hard link may be to any file
    plan = [(rel, served) for rel, served in plan if rel not in shared]
    renamed: list[str] = []
    for folder in RAW_FOLDERS:
        if not with_raw:
            site.remove_below(f"{name}/{folder}")
            continue
        listing = runfiles.plain_files(source, folder)
        linked += listing.links
        shared += listing.shared
        for rel in listing.files:
            if PurePosixPath(rel).name in SKIPPED_FILES or rel.endswith(".tmp"):
                continue
            served = rel + AS_TEXT if served_as_page(rel) else rel
            if served != rel:
                renamed.append(rel)
            plan.append((rel, served))
    for rel in [".", *(served for _, served in plan), "report.html"]:  # the report: rendered there next
        site.claim(name if rel == "." else f"{name}/{rel}")
    site.save()
    for rel, served in plan:
        _copy(source, rel, site, f"{name}/{served}", redactor)
    _say(name, "symbolic link", linked, "left out of the site (a link may lead out of the run)")
    _say(name, "hard-linked file", shared, "left out of the site (it has other names, maybe outside the run)")
    _say(name, "raw file", renamed, f"published as text, {AS_TEXT} added to the name (a browser would open such a "
                                    "file as a page of the site)")


def _copy(source: Path, rel: str, site: Site, target: str, redactor: Redactor | None) -> None:
    with runfiles.reader(source, rel, only_name=True) as fh:
        if redactor is not None:
            data = fh.read()
            if rel in (store.MANIFEST, scenario_claims.FILE):  # JSON: redacted value by value, still JSON
                try:
                    found = json.loads(data.decode("utf-8"))
                except ValueError as exc:
                    raise StoreError(f"{source / rel}: unreadable: {exc}") from None
                data = (json.dumps(redactor.data(found), indent=2, sort_keys=True) + "\n").encode("utf-8")
            elif rel == store.RESULTS:
                data = _redacted_results(source / rel, data, redactor).encode("utf-8")
            else:
                data = redactor.bytes(data)
            site.write(target, data)
            return
        st = os.fstat(fh.fileno())
        if _unchanged(site.root / target, st) and target in site.owned:
            return
        site.write(target, _chunks(fh.read), mtime_ns=st.st_mtime_ns)


def _chunks(read: Callable[[int], bytes]) -> Iterator[bytes]:
    while chunk := read(1 << 20):
        yield chunk


def _unchanged(path: Path, st: os.stat_result) -> bool:
    try:
        found = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_size == st.st_size and found.st_mtime_ns == st.st_mtime_ns


def _redacted_results(path: Path, data: bytes, redactor: Redactor) -> str:
    """results.jsonl: a record a line; a torn last line is left out, as readers skip it."""
    lines = [(n, line) for n, line in enumerate(data.decode("utf-8").splitlines(), 1) if line.strip()]
    records = []
    for n, line in lines:
        try:
            records.append(json.dumps(redactor.data(json.loads(line)), sort_keys=True) + "\n")
        except ValueError:
            if n != lines[-1][0]:
                raise StoreError(f"{path}:{n}: not a result record") from None
    return "".join(records)


def _say(run: str, what: str, paths: list[str], done: str) -> None:
    if not paths:
        return
    shown = ", ".join(paths[:_SHOWN]) + (f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else "")
    count = f"{len(paths)} {what}{'s' if len(paths) > 1 else ''}"
    warnings.warn(Notice(f"{run}: {count} {done}: {shown}"), stacklevel=3)


def page_in_place(run: Path) -> str | None:
    """The first raw file of a run that a site served in place would serve as a page, if any."""
    for folder in RAW_FOLDERS:
        found = next((rel for rel in runfiles.plain_files(run, folder).files if served_as_page(rel)), None)
        if found:
            return found
    return None


def folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())
