"""What every section of a report is built from: the stored runs and their grouping."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import yaml

from toolbench.contract.adapter import PROTOCOL_NAMES
from toolbench.errors import StoreError
from toolbench.record import runfiles, store, yamltext
from toolbench.record.manifest import Manifest
from toolbench.record.schema import RunResult
from toolbench.report import charts, groups
from toolbench.report.site_files import AS_TEXT, served_as_page

if TYPE_CHECKING:
    from toolbench.report.by_target import TargetComparison
    from toolbench.report.likewise import Comparison


@dataclass(frozen=True)
class RunView:
    name: str  # the run folder's name
    label: str  # how charts and tables name the run when several are compared; "" for one run
    href: str  # the run folder, relative to the report file
    manifest: Manifest
    results: list[RunResult]
    raw_kept: bool = True  # the raw files are beside the records (a site published without them has none)
    path: Path | None = None  # the run folder: its raw files, records beside the results (criteria.json)

    def raw_file(self, relative: str) -> Path | None:
        """A file the run stored (an artifact's path), only inside the run folder; None otherwise."""
        if self.path is None:
            return None
        try:
            found = store.contained(self.path, relative)
        except StoreError:
            return None
        return found if found.is_file() else None

    def file_link(self, path: str) -> str | None:
        """A link to a file the run's records name (an artifact's path), only when it is a plain
        file of the run: never an absolute path, a `..`, a URL or a link (None then). A raw file
        a site serves as text (toolbench.report.site_files) is linked under that name."""
        try:
            rel = "/".join(runfiles.parts_of(path))
        except StoreError:
            return None
        if self.path is None:
            return None
        if served_as_page(rel) and not runfiles.is_plain_file(self.path, rel):
            rel += AS_TEXT
        return self.link(rel) if runfiles.is_plain_file(self.path, rel) else None

    def link(self, path: str) -> str:
        """A link to a file of the run, relative to the report: the folder publishes as it is."""
        base = self.href.rstrip("/")
        joined = path if base in ("", ".") else f"{base}/{path}"
        return quote(joined or "./")

    @property
    def scenario(self) -> str:
        return self.manifest.scenario.name or self.name

    @property
    def started_at(self) -> str | None:
        return self.manifest.started_at

    @functools.cached_property
    def scenario_source(self) -> dict[str, Any]:
        """The scenario as it was given, read from the manifest's copy of its text; {} when
        that text is missing or no longer reads (the run's own records are what count). A text
        whose aliases would expand without bound is refused (StoreError): the run is not rendered."""
        text = self.manifest.scenario.text
        try:
            loaded = yamltext.load(text) if isinstance(text, str) else None
        except yamltext.Refused as exc:
            raise StoreError(f"{self.name}: the scenario text in its {store.MANIFEST}: {exc}") from None
        except yaml.YAMLError:
            return {}
        return loaded if isinstance(loaded, dict) else {}

    @property
    def description(self) -> str:
        return self.manifest.scenario.description

    @property
    def stop(self) -> str:
        """How each cell stopped, as the scenario said it ("duration 3s"); "" when unknown."""
        stop = self.scenario_source.get("stop")
        if not isinstance(stop, dict):
            return ""
        return ", ".join(f"{key} {value}" for key, value in sorted(stop.items()))

    @property
    def cpu_count(self) -> int | None:
        """The generator's cores (the manifest's environment is the generator host's facts)."""
        value = self.manifest.environment.cpu_count
        return value if value is not None and value > 0 else None


@dataclass(frozen=True)
class Context:
    runs: list[RunView]
    points: list[groups.Point]
    series: list[groups.Series]
    tools: list[str] = field(default_factory=list)  # every tool in the report, in a fixed order

    @classmethod
    def of(cls, runs: list[RunView]) -> "Context":
        pts = groups.points((run.label, run.results) for run in runs)
        tools = sorted({r.identity.label for run in runs for r in run.results})
        return cls(runs=runs, points=pts, series=groups.series(pts), tools=tools)

    @functools.cached_property
    def comparisons(self) -> list[Comparison]:
        """The like-for-like comparisons (toolbench.report.likewise), made once per report."""
        from toolbench.report import likewise  # it reads this module: imported on first use

        return likewise.comparisons(self)

    @functools.cached_property
    def target_comparisons(self) -> list[TargetComparison]:
        """Each tool's cells compared across the targets of a run with several (toolbench.report.by_target)."""
        from toolbench.report import by_target as targets  # it reads this module: imported on first use

        return targets.comparisons(self)

    @property
    def several(self) -> bool:
        return len(self.runs) > 1

    @property
    def results(self) -> list[tuple[RunView, RunResult]]:
        return [(run, r) for run in self.runs for r in run.results]

    @functools.cached_property
    def protocols(self) -> list[str]:
        """Every protocol of the report's cells, in toolbench's order of them."""
        found = {r.identity.protocol for _, r in self.results}
        return sorted(found, key=lambda p: (p not in PROTOCOL_NAMES, list(PROTOCOL_NAMES).index(p)
                                            if p in PROTOCOL_NAMES else 0, p))

    def style(self, key: groups.SeriesKey, *, probe: bool = False) -> charts.Style:
        """One colour and marker per tool (and run, and protocol), a line style per keep-alive setting."""
        tool = self.tools.index(key.tool) if key.tool in self.tools else 0
        run = next((i for i, r in enumerate(self.runs) if r.label == key.run), 0)
        protocol = self.protocols.index(key.protocol) if key.protocol in self.protocols else 0
        index = tool + (run * len(self.protocols) + protocol) * max(1, len(self.tools))
        if probe:
            return charts.Style(index, ":", hollow=True)
        style = charts.keepalive_style(index, key.keepalive)
        return charts.Style(style.index, style.linestyle, hollow=run % 2 == 1)
