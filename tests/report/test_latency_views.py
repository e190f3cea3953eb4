"""The data behind the report's latency views, checked against the hdrhistogram library's own
figures, over recorded ab -g output and a stored run's histograms."""
from __future__ import annotations

import csv
import io
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, recorded
from helpers import report_data
from toolbench.contract import registry
from toolbench.contract.adapter import RawOutput
from toolbench.errors import ParseError
from toolbench.record import histogram, store, timings
from toolbench.report import charts, groups, latency_data, latency_time, latency_views, render
from toolbench.report.context import Context, RunView

STORED_V2 = Path(__file__).parents[1] / "fixtures" / "stored" / "v2-0.2.0"


def ab_g(case: str = "2.3-seconds-gnuplot") -> tuple[np.ndarray, np.ndarray]:
    """The -g file's own columns: each request's epoch second and its ttime."""
    rows = [line.split("\t") for line in (FIXTURES / "ab" / f"{case}.tsv").read_text().splitlines()[1:]]
    return np.array([int(r[1]) for r in rows], np.int64), np.array([int(r[4]) for r in rows], np.int64)


def tally(*batches: tuple[np.ndarray, np.ndarray]) -> timings.SecondTally:
    found = timings.SecondTally()
    for seconds, times in batches:
        found.add(seconds, times)
    return found


def stored_histograms() -> list[str]:
    return [r.measurement.histogram for r in store.RunDir.open(STORED_V2).results() if r.measurement.histogram]


def hgrm_rows(hist) -> list[tuple[float, float, int]]:
    """The library's own percentile distribution (.hgrm text, in ms): value, percentile, total count."""
    out = io.BytesIO()
    hist.output_percentile_distribution(out, 1000.0, histogram.TICKS_PER_HALF_DISTANCE)
    rows = []
    for line in out.getvalue().decode().splitlines():
        parts = line.split()
        if len(parts) >= 3 and re.fullmatch(r"[\d.]+", parts[0]) and re.fullmatch(r"[\d.]+", parts[1]):
            rows.append((float(parts[0]), float(parts[1]), int(parts[2])))
    return rows


def ab_histograms() -> list[str]:
    return [histogram.encode(histogram.from_ms(ab_g(case)[1].tolist()))
            for case in ("2.3-seconds-gnuplot", "2.3-nokeepalive", "2.3-keepalive-gnuplot")]


@pytest.mark.parametrize("encoded", stored_histograms() + ab_histograms())
def test_the_hdr_plot_levels_are_the_librarys_percentile_distribution(encoded: str) -> None:
    hist = histogram.decode(encoded)
    levels, top = latency_data.distribution(hist)
    library = [(step.percentile_level_iterated_to, step.value_iterated_to / 1000.0, step.total_count_to_this_value)
               for step in hist.get_percentile_iterator(histogram.TICKS_PER_HALF_DISTANCE)]
    assert [(lv.percentile, lv.value_ms, lv.count) for lv in levels] == [row for row in library if row[0] < 100.0]
    rows = hgrm_rows(hist)
    below = [row for row in rows if row[1] < 1.0]
    assert len(levels) == len(below) > 10
    for level, (value_ms, fraction, count) in zip(levels, below):
        assert level.value_ms == pytest.approx(value_ms, abs=0.0005)  # .hgrm prints 3 decimals
        assert level.percentile / 100.0 == pytest.approx(fraction, abs=5e-13)
        assert level.count == count
        assert level.inverse_tail == pytest.approx(1.0 / (1.0 - fraction), rel=1e-6)
    assert rows[-1][1] == 1.0 and top == hist.get_max_value() / 1000.0 == pytest.approx(rows[-1][0], abs=0.0005)
    # The standard percentiles lie on the curve: p50, p90, p99 are the library's values at those levels.
    for q in (50.0, 90.0, 99.0):
        at = next(level for level in levels if level.percentile >= q)
        assert at.value_ms >= hist.get_value_at_percentile(q) / 1000.0 or hist.values_are_equivalent(
            int(at.value_ms * 1000), hist.get_value_at_percentile(q))


def test_the_plotted_line_is_the_distribution_up_to_the_slowest_and_below_resolution_left_out() -> None:
    hist = histogram.from_ms(ab_g("2.3-nokeepalive")[1].tolist())
    point = groups.Point(groups.SeriesKey("", "ab", "", False), 10, ())
    line = latency_views.percentile_line(latency_views.Merged(point, hist, 1, 1.0), charts.Style())
    assert line is not None and line.tips is not None and len(line.tips) == len(line.xs) == len(line.ys)
    levels, top = latency_data.distribution(hist)
    kept = [level for level in levels if level.value_ms >= 1.0]
    assert len(kept) < len(levels)  # ab rounds most of these loopback requests to 0 ms
    drawn = dict(zip(line.xs, line.ys))
    assert set(drawn.items()) <= {(level.inverse_tail, level.value_ms) for level in kept}
    assert line.ys[-1] == top and line.xs == sorted(line.xs) and line.ys == sorted(line.ys)
    assert len(drawn) < len(kept) / 3  # whole milliseconds: long flat runs, drawn by their ends
    for level in kept:  # every level lies on the line drawn: at a point, or between two of the same value
        below = max(x for x in line.xs if x <= level.inverse_tail)
        above = min(x for x in line.xs if x >= level.inverse_tail)
        assert drawn[below] == level.value_ms == drawn[above] or level.inverse_tail in drawn
    assert line.tips[-1].endswith(f"took at most {top:.2f} ms (the slowest)")
    assert latency_views.percentile_line(latency_views.Merged(point, hist, 1, 100.0), charts.Style()) is None


@pytest.mark.parametrize("case, resolution", [("2.3-seconds-gnuplot", 1.0), ("2.3-nokeepalive", 1.0),
                                              ("2.3-seconds-gnuplot", None)])
def test_every_request_lands_in_one_bucket(case: str, resolution: float | None) -> None:
    times = ab_g(case)[1]
    hist = histogram.from_ms(times.tolist())
    found = latency_data.buckets(hist, resolution)
    assert sum(b.count for b in found) == len(times)
    assert all(a.high_ms == b.low_ms for a, b in zip(found, found[1:]))  # contiguous
    if resolution:
        # whole-ms times: each bucket counts exactly the requests of its whole milliseconds
        assert all(b.high_ms - b.low_ms >= resolution for b in found)
        for b in found:
            assert b.count == int(np.count_nonzero((times >= b.low_ms) & (times < b.high_ms)))
    assert found[0].count > 0 and found[-1].count > 0


def test_a_stored_engine_histogram_buckets_hold_its_count() -> None:
    for encoded in stored_histograms():
        hist = histogram.decode(encoded)
        assert sum(b.count for b in latency_data.buckets(hist)) == hist.get_total_count()


def hdr_rank_percentile(values: np.ndarray, q: float) -> float:
    """HdrHistogram's rule: the smallest value with round(q x n) values at or below it (at least one)."""
    ordered = np.sort(values)
    rank = max(1, int(q * len(ordered) / 100.0 + 0.5))
    return float(ordered[rank - 1])


def test_percentiles_per_second_equal_each_seconds_own_histogram() -> None:
    seconds, times = ab_g()
    found = tally((seconds, times)).percentiles()
    first = int(seconds.min())
    assert [s.second for s in found] == sorted({int(s) - first for s in seconds}) == [0, 1, 2, 3]
    assert [s.requests for s in found] == [7, 712, 734, 716]
    for s in found:
        mine = times[seconds == first + s.second]
        hist = histogram.from_ms(mine.tolist())
        for q, value in zip(timings.OVER_TIME, s.values_ms):
            assert value == hdr_rank_percentile(mine, q)
            assert hist.values_are_equivalent(max(1, int(value * 1000)), hist.get_value_at_percentile(q))
    assert any(a.values_ms != b.values_ms for a, b in zip(found, found[1:]))  # not one figure repeated


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=8), st.integers(0, 10**6))
def test_percentiles_per_second_do_not_depend_on_how_the_requests_are_cut(cuts: list[int], shift: int) -> None:
    seconds, times = ab_g()
    seconds = seconds + shift  # any epoch
    whole = tally((seconds, times)).percentiles()
    order = np.argsort(times % 7, kind="stable")  # another order of the same requests
    parts = np.array_split(order, len(cuts) + 1)
    assert tally(*[(seconds[p], times[p]) for p in parts[::-1]]).percentiles() == whole


@pytest.mark.parametrize("seconds, times", [([-1], [3]), ([1], [-3]), ([0, 2_000_000], [1, 1])])
def test_impossible_timings_are_refused(seconds: list[int], times: list[int]) -> None:
    with pytest.raises(ValueError):
        timings.SecondTally().add(np.array(seconds), np.array(times))


def test_tips_are_escaped_titles_of_the_points_they_name() -> None:
    line = charts.Line("x", [1.0, 2.0, 3.0], [1.0, float("nan"), 2.0], tips=("a <b>&", "never", '"c"'))
    svg = charts.line_chart("t", [line], charts.Axes("x", "y"), alt="alt")
    assert re.findall(r"<g><title>([^<]*)</title><use ", svg) == ["a &lt;b&gt;&amp;", "&quot;c&quot;"]
    assert "never" not in svg and "<b>" not in svg


def test_a_stored_run_renders_its_latency_views(tmp_path: Path) -> None:
    out, data = render.render_with_data([STORED_V2], tmp_path / "report.html")
    sections = {s.id: s for s in data.sections}
    distribution, over_time = sections["latency-distribution"], sections["latency-time"]
    assert [f.alt for f in distribution.figures] == ["HDR percentile distribution", "latency histogram"]
    assert [f.alt for f in over_time.figures] == ["latency over time"]
    assert over_time.points == ("engine gives no per-request timings with their second, so no percentile per second "
                                "is computed for it (a per-second series, where it has one, holds counts, mean and "
                                "max).",)
    html = out.read_text()
    assert len(re.findall(r"<title>ab, keep-alive on, concurrency 4: [^<]* ms \(the slowest\)</title>", html)) == 1
    assert html.count("<title>engine, keep-alive off, concurrency 4:") > 20


def test_per_second_percentiles_come_from_the_runs_own_file(tmp_path: Path) -> None:
    run = store.RunDir.open(STORED_V2)
    view = RunView(name="v2", label="", href=".", manifest=run.manifest(), results=run.results(), path=run.path)
    ab = next(r for r in view.results if r.identity.cell_id == "ab-c4-ka-rep1")
    found = latency_time.timeline(view, ab)
    tsv = [a.path for a in ab.outcome.artifacts if a.role == "tsv"][0]
    from_adapter = registry.get("ab").timings(RawOutput(files={"tsv": STORED_V2 / tsv}))
    assert from_adapter is not None and found == from_adapter.percentiles()
    rows = [line.split("\t") for line in (STORED_V2 / tsv).read_text().splitlines()[1:]]
    assert found == tally((np.array([int(r[1]) for r in rows]), np.array([int(r[4]) for r in rows]))).percentiles()
    # A run folder moved without its raw files still renders: there is then nothing to read.
    bare = tmp_path / "bare"
    shutil.copytree(STORED_V2, bare, ignore=shutil.ignore_patterns("requests.tsv"))
    moved = RunView(name="bare", label="", href=".", manifest=view.manifest, results=view.results, path=bare)
    assert latency_time.timeline(moved, ab) is None
    ctx = Context.of([moved])
    points = latency_time.over_time_section(ctx).points
    assert points[0].startswith("ab, keep-alive on, concurrency 4: no file of per-request timings was kept")


def test_an_artifact_path_leading_out_of_the_run_is_not_read(tmp_path: Path) -> None:
    run = store.RunDir.open(STORED_V2)
    view = RunView(name="v2", label="", href=".", manifest=run.manifest(), results=[], path=run.path)
    assert view.raw_file("../v1-0.1.0/results.jsonl") is None
    assert view.raw_file("/etc/passwd") is None
    assert view.raw_file("raw/ab-c4-ka-rep1/requests.tsv") is not None


def test_the_full_report_fixture_draws_ab_and_names_siege(tmp_path: Path) -> None:
    ctx = Context.of(render.load_views([store.RunDir.open(report_data.full_run(tmp_path))], tmp_path))
    found, points, left_out = latency_time.timelines(ctx)
    # The peaks first; the ok cells without a -g file (ab-c1, ab-c500: recorded without it) say so.
    assert [(t.point.key.label, t.result.identity.cell_id) for t in found] == [
        ("ab, keep-alive on", "ab-c10-ka-rep2"), ("ab, keep-alive off", "ab-c10-close-rep1")] and left_out == 0
    assert points[0] == ("ab, keep-alive off, concurrency 1, 500: no file of per-request timings was kept, so no "
                         "percentile per second is drawn.")
    points = points[1:]
    assert points == ["siege gives no per-request timings with their second, so no percentile per second is "
                      "computed for it (a per-second series, where it has one, holds counts, mean and max)."]


def jtl_columns(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """timeStamp // 1000 and elapsed of every sample, read with the csv module or ElementTree."""
    if path.read_bytes().lstrip().startswith(b"<"):
        samples = [e for e in ET.parse(path).getroot() if e.tag in ("httpSample", "sample")]
        ts, elapsed = [int(e.get("ts")) for e in samples], [int(e.get("t")) for e in samples]
    else:
        rows = list(csv.DictReader(path.read_text().splitlines()))
        ts, elapsed = [int(r["timeStamp"]) for r in rows], [int(r["elapsed"]) for r in rows]
    return np.array(ts, np.int64) // 1000, np.array(elapsed, np.int64)


@pytest.mark.parametrize("case", ["5.6.3-csv", "3.3-csv", "5.6.3-csv-nokeepalive", "5.6.3-xml"])
def test_jmeter_timings_are_every_samples_second_and_elapsed(case: str) -> None:
    found = registry.get("jmeter").timings(recorded("jmeter", case, jtl="jtl"))
    seconds, times = jtl_columns(FIXTURES / "jmeter" / f"{case}.jtl")
    assert found is not None and found.requests == len(seconds) > 100
    assert found.percentiles() == tally((seconds, times)).percentiles()
    assert registry.get("jmeter").timings(recorded("jmeter", case)) is None  # no JTL kept: nothing to read


def test_a_damaged_jtl_is_a_parse_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jtl"
    bad.write_text("timeStamp,elapsed,success\n1796069682000,-5,true\n")
    with pytest.raises(ParseError, match="bad.jtl"):
        registry.get("jmeter").timings(RawOutput(files={"jtl": bad}))


def test_a_damaged_per_request_file_is_said_in_one_line_and_the_rest_still_renders(tmp_path: Path) -> None:
    copy = tmp_path / "v2"
    shutil.copytree(STORED_V2, copy)
    tsv = copy / "raw" / "ab-c4-ka-rep1" / "requests.tsv"
    tsv.write_text(tsv.read_text().replace("\t", " ", 7))  # the first row is no longer a -g row
    out, data = render.render_with_data([copy], tmp_path / "report.html")
    over_time = next(s for s in data.sections if s.id == "latency-time")
    said = [p for p in over_time.points if p.startswith("ab, keep-alive on: ")]
    assert len(said) == 1 and "raw/ab-c4-ka-rep1/requests.tsv" in said[0] and str(tmp_path) not in said[0], said
    assert [f.alt for f in over_time.figures] == ["latency over time"]  # keep-alive off still drawn


def test_a_version_1_run_re_renders_with_its_repetitions_merged_exactly(tmp_path: Path) -> None:
    v1 = STORED_V2.parent / "v1-0.1.0"
    out, data = render.render_with_data([v1], tmp_path / "report.html")
    assert [f.alt for s in data.sections if s.id.startswith("latency-") for f in s.figures] == [
        "HDR percentile distribution", "latency histogram", "latency over time"]
    reps = [r for r in store.RunDir.open(v1).results() if r.identity.tool == "ab" and r.identity.keepalive]
    merged = histogram.merge(r.measurement.histogram for r in reps if r.measurement.histogram)
    assert len(reps) == 2 and merged.get_total_count() == sum(r.measurement.counts.requests_total for r in reps)
    slowest = re.findall(r"<title>ab, keep-alive on, concurrency 4, 2 repetitions: ([\d.]+) % of ([\d,]+) requests "
                         r"took at most ([\d.]+) ms \(the slowest\)</title>", out.read_text())
    assert len(slowest) == 1
    assert int(slowest[0][1].replace(",", "")) == merged.get_total_count()
    assert float(slowest[0][2]) == pytest.approx(merged.get_max_value() / 1000.0, abs=0.005)


def test_seconds_of_several_batches_span_one_run_at_most() -> None:
    found = timings.SecondTally()
    found.add(np.array([1_000_005]), np.array([7]))
    found.add(np.array([1_000_000, 1_000_002]), np.array([3, 4]))  # earlier seconds, later: re-based
    assert [(s.second, s.requests, s.values_ms) for s in found.percentiles()] == [
        (0, 1, (3.0, 3.0, 3.0)), (2, 1, (4.0, 4.0, 4.0)), (5, 1, (7.0, 7.0, 7.0))]
    with pytest.raises(ValueError, match="span more than"):
        found.add(np.array([1_000_000 + timings.MAX_SERIES_S + 1]), np.array([1]))
    assert found.requests == 3
