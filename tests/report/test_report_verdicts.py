"""The verdict over recorded runs: real run folders made by `toolbench run` (tests/fixtures/runs,
see its README), one per case the verdict must get right, each asserting the sentence it writes;
and two runs of the quickstart that must not contradict each other."""
from __future__ import annotations

import dataclasses
import functools
import json
import statistics
from pathlib import Path

import pytest

from toolbench.contract import cores
from toolbench.contract.adapter import Threads
from toolbench.record import derive, stats, store
from toolbench.record.schema import Counts, Fidelity, GeneratorCost, Rates, RunResult
from toolbench.report import bounds, fmt, groups, likewise, model, render
from toolbench.report.context import Context, RunView

RUNS = Path(__file__).parents[1] / "fixtures" / "runs"
CASES = ("tie", "server-bound", "generator-bound", "mixed-keepalive", "mostly-503", "all-failed", "interrupted",
         "pair-a", "pair-b", "two-targets")


def views(*names: str) -> list[RunView]:
    return render.load_views([store.RunDir.open(RUNS / name) for name in names], RUNS)


@functools.cache  # a build renders every chart (seconds); the tests only read what it returns
def build(*names: str) -> model.ReportData:
    return model.build(views(*names))


def verdict(name: str):
    (found,) = build(name).verdicts
    return found


def topics(name: str) -> dict[str, str]:
    return {t.name: t.text for t in verdict(name).topics}


def section(data: model.ReportData, section_id: str):
    return next(s for s in data.sections if s.id == section_id)


def column(table, label: str) -> list[str]:
    index = [c.label for c in table.columns].index(label)
    return [row.values[index].text for row in table.rows]


def test_a_tie_is_said_as_a_tie() -> None:
    # 10 ms per request at concurrency 10: no tool can pass 1,000 requests/s, and both came close.
    assert verdict("tie").headline == (
        "ab and engine generated the same load within the noise in the one like-for-like comparison (at "
        "concurrency 10, keep-alive on: ab 690/s ±11 % and engine 673/s ±3.8 %).")
    ranking = section(build("tie"), "ranking").tables[0]
    assert column(ranking, "rank") == ["1=", "1="]
    assert column(ranking, "limit") == ["neither", "neither"]


def test_where_the_server_is_the_limit_tools_are_ranked_by_cpu_per_request() -> None:
    assert verdict("server-bound").headline == (
        "The server was the limit in the one like-for-like comparison, so throughput does not rank these tools; by "
        "CPU per request, ab spent the least, beyond the noise (at concurrency 50, keep-alive on: 22.58 µs ±8.0 %, "
        "2.0× less than engine's 45.28 µs ±19 %).")
    assert topics("server-bound")["Limits"].startswith(
        "Limited by the server (the probe far above its unloaded time, or the server's CPU saturated): ab at c 50, "
        "keep-alive on; engine at c 50, keep-alive on.")
    ranking = section(build("server-bound"), "ranking").tables[0]
    assert column(ranking, "ranked by") == ["CPU per request"] * 2 and column(ranking, "tool") == ["ab", "engine"]


def test_a_gil_bound_tool_at_its_one_core_is_generator_bound() -> None:
    headline = verdict("generator-bound").headline
    assert headline.startswith("locust, the only tool here, peaked at ") and headline.endswith(
        "at concurrency 10, keep-alive on, limited by its own CPU.")
    assert topics("generator-bound")["Limits"].startswith("Limited by the generator (the tool's processes used all "
                                                          "the CPU its design can use): locust at c 10")


def test_a_gil_bound_tool_counts_one_core_per_process_a_threaded_one_every_core() -> None:
    """Mutations of the recorded Locust cells: the same CPU share reads differently by design."""
    (point,) = [p for p in Context.of(views("generator-bound")).points]
    def at(pct: float, tool: str, processes: int = 1):
        results = tuple(dataclasses.replace(
            r, identity=dataclasses.replace(r.identity, tool=tool),
            cost=dataclasses.replace(r.cost or GeneratorCost(), cpu_mean_pct=pct, processes_peak=processes))
            for r in point.results)
        return bounds.limit_of(dataclasses.replace(point, results=results), host_cores=2).bound.value
    assert at(97.0, "locust") in ("generator", "server and generator")
    assert at(97.0, "siege") in ("neither", "server")  # threads on both cores: half of what it can use
    assert at(97.0, "locust", processes=3) in ("neither", "server")  # a master and two workers: two cores
    assert at(50.0, "ab") in ("neither", "server")
    assert cores.threads_of("ab") is Threads.ONE and cores.threads_of("jmeter") is Threads.ALL
    assert cores.threads_of("no-such-tool") is Threads.ALL


def test_keep_alive_on_is_never_ranked_against_keep_alive_off() -> None:
    found = verdict("mixed-keepalive")
    assert found.headline == (
        "ab generated the most successful requests/s in 1 of 2 like-for-like comparisons, beyond the noise (at "
        "concurrency 10, keep-alive on: 15,622/s (noise not measured), 5.0× siege's 3,132/s (noise not measured)); the other "
        "tied within the noise (at concurrency 10, keep-alive off: siege 3,535/s (noise not measured) and ab 3,092/s "
        "(noise not measured)).")
    sentences = next(t for t in found.topics if t.name == "Like for like").sentences
    assert sentences[0].text.startswith("Concurrency 10, keep-alive on: ab 15,622/s")
    assert sentences[1].text.startswith("Concurrency 10, keep-alive off: siege 3,535/s (noise not measured) and ab 3,092/s")


def test_tools_that_share_no_like_for_like_cell_are_not_ranked() -> None:
    """The recorded run with ab only keep-alive on and siege only keep-alive off, as the issue found
    a headline comparing them: a mutation of the recorded results."""
    (run,) = views("mixed-keepalive")
    kept = [r for r in run.results if (r.identity.tool == "ab") == bool(r.identity.keepalive)]
    (found,) = model.build([dataclasses.replace(run, results=kept)]).verdicts
    assert found.headline == (
        "No two tools finished a like-for-like cell (same keep-alive and concurrency), so none is ranked; the highest "
        "was ab's 15,622 successful requests/s (noise not measured) at concurrency 10, keep-alive on.")


def test_throughput_counts_successes_and_the_error_rate_sits_beside_it() -> None:
    assert verdict("mostly-503").headline == (
        "ab, the only tool here, peaked at 148 successful requests/s ±2.7 % at concurrency 10, keep-alive on; 99 % "
        "of its requests failed.")
    data = build("mostly-503")
    table = section(data, "results").tables[0]
    ok, tried = column(table, "ok req/s"), column(table, "attempted req/s")
    assert all(float(a.rstrip("†").replace(",", "")) < float(b.replace(",", "")) / 50 for a, b in zip(ok, tried))
    assert column(table, "error %") == ["99.0 %", "99.0 %"]
    (peak,) = section(data, "peaks").tables[0].rows
    assert peak.values[2].text == "148"
    assert "Failed requests, beside the successful rate the ranking uses: ab 99.0 % at c 10" \
        in topics("mostly-503")["Failures"]
    # The probe ran, and every request it made was answered 503: that is not "no probe".
    assert topics("mostly-503")["Truthfulness"].startswith("The probe ran but every request it timed during the "
                                                           "load failed")


def test_an_all_failed_run_says_so_in_every_section() -> None:
    data = build("all-failed")
    assert verdict("all-failed").headline == ("No cell finished ok (2 cells recorded), so this run cannot say which "
                                              "tool generated the most.")
    env = dict((r.values[0].text, r.values[1].text) for r in section(data, "environment").tables[0].rows)
    assert env["status"] == "complete: no cell finished ok (2 ran)"
    assert "No tool reported" not in section(data, "latency").absent
    assert "not measured" not in section(data, "cost").absent


def test_an_interrupted_run_says_so() -> None:
    found = verdict("interrupted")
    assert found.headline.startswith("Interrupted run (3 cells recorded). ")
    assert "1 cell was interrupted: ab-c50-ka-rep1." in topics("interrupted")["Failures"]
    env = dict((r.values[0].text, r.values[1].text)
               for r in section(build("interrupted"), "environment").tables[0].rows)
    assert env["status"] == "interrupted: 2 of 3 cells ok (1 interrupted)"


@pytest.mark.parametrize("case", CASES)
def test_every_section_agrees_with_the_results_table(case: str) -> None:
    data = build(case)
    table = section(data, "results").tables[0]
    statuses = column(table, "status")
    env = dict((r.values[0].text, r.values[1].text) for r in section(data, "environment").tables[0].rows)
    assert f"{statuses.count('ok')} of {len(statuses)} cells ok" in env["status"] or (
        "ok" not in statuses and "no cell finished ok" in env["status"])
    if any(v != "—" for v in column(table, "p50 ms")):
        assert "No tool reported latency percentiles" not in section(data, "latency").absent
    if any(c.label == "CPU µs/req" for c in table.columns):
        assert "was not measured" not in section(data, "cost").absent
        assert "was not measured (no monitor data)" not in topics(case).get("Cost", "")
    # The ranking table shows each cell's median successful rate from the results, as stored.
    results = json_results(case)
    several = len({r.identity.target_label for r in results}) > 1
    for ranking in section(data, "ranking").tables:
        variants = (column(ranking, "variant") if any(c.label == "variant" for c in ranking.columns)
                    else [""] * len(ranking.rows))
        for keepalive, concurrency, tool, rate, variant in zip(
                *(column(ranking, label) for label in ("keep-alive", "concurrency", "tool", "ok req/s")), variants):
            mine = [stats.throughput(r) for r in results if r.identity.tool == tool and r.outcome.status.value == "ok"
                    and fmt.number(r.identity.concurrency) == concurrency
                    and fmt.yes_no(r.identity.keepalive) == keepalive
                    and groups.variant_of(r, several) == variant]
            assert rate.rstrip("†") == fmt.number(statistics.median(mine)), (case, tool, concurrency, keepalive)


def json_results(case: str) -> list[RunResult]:
    return [RunResult.from_dict(json.loads(line)) for line in (RUNS / case / "results.jsonl").read_text().splitlines()]


def test_two_runs_of_the_quickstart_do_not_contradict_each_other() -> None:
    ctx = Context.of(views("pair-a", "pair-b"))
    comps = likewise.comparisons(ctx)
    first, second = ([c for c in comps if c.run == run.label] for run in ctx.runs)
    assert likewise.contradictions(first, second) == []
    conclusion = section(build("pair-a", "pair-b"), "compare").points[0]
    assert conclusion.endswith("no like-for-like comparison ranks two tools in opposite orders.")
    # The same winner, or the same tie: the tools that led any comparison, each by its own measure.
    leaders = [{c.winner for c in mine if len(c.cells) > 1} - {None} for mine in (first, second)]
    assert leaders[0] == leaders[1] and len(leaders[0]) <= 1
    a, b = (v.headline for v in build("pair-a", "pair-b").verdicts)
    assert a.startswith("ab led in 3 of 4 like-for-like comparisons, beyond the noise: in 3 by CPU per request, "
                        "where the server was the limit")
    assert b.startswith("ab led in 3 of 4 like-for-like comparisons, beyond the noise: in 1 by successful "
                        "requests/s, where the server had room")


def test_opposite_orders_are_caught() -> None:
    """The check above can fail: the same run against itself with two tools' names swapped."""
    ctx = Context.of(views("pair-a"))
    comps = likewise.comparisons(ctx)
    swap = {"ab": "engine", "engine": "ab"}

    def swapped(c: likewise.Cell) -> likewise.Cell:
        key = dataclasses.replace(c.point.key, tool=swap.get(c.tool, c.tool))
        return dataclasses.replace(c, point=dataclasses.replace(c.point, key=key))

    mirrored = [dataclasses.replace(c, cells=tuple(swapped(x) for x in c.cells),
                                    by_rate=tuple(tuple(swapped(x) for x in t) for t in c.by_rate),
                                    by_cost=tuple(tuple(swapped(x) for x in t) for t in c.by_cost)) for c in comps]
    ranked = [c for c in comps if c.by is not likewise.By.NOTHING and c.order("ab") != c.order("engine")]
    assert ranked and likewise.contradictions(comps, mirrored)


def test_the_successful_rate_is_the_tools_own_when_none_failed_else_derived() -> None:
    rates = Rates(rps=100.0, rps_derived=98.0)
    assert derive.ok_rate(Counts(requests_total=200, requests_ok=200, requests_failed=0), rates, 2.0) == \
        (100.0, Fidelity.REPORTED)
    assert derive.ok_rate(Counts(requests_total=200, requests_ok=20, requests_failed=180), rates, 2.0) == \
        (10.0, Fidelity.DERIVED)
    assert derive.ok_rate(Counts(requests_total=200), rates, 2.0) == (None, None)  # successes unknown: absent
    assert derive.ok_rate(Counts(requests_total=200, requests_ok=0, requests_failed=200), rates, 2.0) == \
        (0.0, Fidelity.DERIVED)  # a real zero


def test_noise_and_ties() -> None:
    assert stats.half_range_pct([90.0, 110.0]) == 10.0
    both = stats.estimate([90.0, 110.0])
    assert both == stats.Estimate(100.0, 10.0, "2 repetitions", repetitions=2) and not both.noise_measured
    one = stats.estimate([100.0], seconds=[95.0, 105.0, 100.0])
    assert one == stats.Estimate(100.0, 5.0, "3 whole seconds")
    assert stats.estimate([100.0]).noise_pct is None  # not measured: UNMEASURED_FLOOR_PCT is the bar
    assert stats.estimate([90.0, 100.0, 110.0]).noise_measured  # three repetitions: the noise between runs
    assert not stats.differs(stats.Estimate(100.0, None), stats.Estimate(109.0, 0.0))  # under the floor: a tie
    assert not stats.differs(stats.Estimate(100.0, 10.0), stats.Estimate(114.0, 5.0))  # 14 < 10 + 5.7
    assert stats.differs(stats.Estimate(100.0, 2.0), stats.Estimate(110.0, 2.0))
    assert not stats.differs(stats.Estimate(100.0, 0.0), stats.Estimate(104.0, 0.0))  # under 5 %: a tie anyway


def test_whole_seconds_drop_the_partial_first_and_last() -> None:
    (result,) = [r for r in json_results("tie") if r.identity.tool == "ab"][:1]
    assert len(result.measurement.series) >= 3
    assert stats.whole_seconds(result) == result.measurement.series[1:-1]


def test_two_targets_are_compared_per_tool_with_the_servers_cost() -> None:
    data = build("two-targets")
    (found,) = data.verdicts
    said = {t.name: [s.text for s in t.sentences] for t in found.topics}
    # A real run: ab and siege against nginx (one worker) and tiny_server.py, each twice.
    assert found.headline.endswith("Across targets, for each tool: the targets tied within the noise in 2 of 2 "
                                   "comparisons of targets.")
    assert said["Targets"][0].startswith("ab at concurrency 10, keep-alive on: the targets served the same within "
                                         "the noise (tiny 13,952/s ±1.5 %, nginx 13,061/s ±31 %); the server's CPU "
                                         "per request: nginx 31.61 µs ±20 %, tiny 38.78 µs ±16 %.")
    assert said["Targets"][1].endswith("nginx 45.76 µs ±3.4 %, tiny 60.36 µs ±20 %, nginx the cheapest beyond the "
                                       "noise.")
    table = section(data, "targets").tables[0]
    assert column(table, "tool") == ["ab", "ab", "siege", "siege"]
    assert column(table, "target") == ["tiny", "nginx", "tiny", "nginx"]
    assert column(table, "rank") == ["1=", "1=", "1=", "1="]
    assert column(table, "server CPU µs / request") == ["38.78", "31.61", "60.36", "45.76"]
    assert column(table, "p99 ms")[:2] == ["4.47", "5.83"] and column(table, "p99 ms")[2:] == [fmt.ABSENT] * 2
    assert column(table, "error %") == ["0.0 %"] * 4


def test_the_server_cost_stands_beside_the_generators() -> None:
    data = build("two-targets")
    cost = section(data, "cost").tables[0]
    labels = [c.label for c in cost.columns]
    assert labels.index("server CPU µs / request") == labels.index("CPU µs / request") + 1
    assert column(cost, "tool")[:2] == ["ab on nginx", "ab on tiny"]
    assert column(cost, "server CPU µs / request")[:2] == ["31.61", "38.78"]
    results = section(data, "results").tables[0]
    assert column(results, "server CPU µs/req")[0] == "25.33"
    # A run without the server's cost shows no such column (its absence, not a column of dashes).
    assert "server CPU µs/req" not in [c.label for c in section(build("tie"), "results").tables[0].columns]


def test_charts_keep_one_series_per_target_and_tool_and_a_single_target_run_has_no_targets_section() -> None:
    data = build("two-targets")
    labels = {s.key.label for s in Context.of(views("two-targets")).series}
    assert labels == {"ab on nginx, keep-alive on", "ab on tiny, keep-alive on", "siege on nginx, keep-alive on",
                      "siege on tiny, keep-alive on"}
    assert "ab on nginx, keep-alive on" in section(data, "throughput").figures[0].svg
    assert all(s.id != "targets" for s in build("tie").sections)


def test_a_run_that_compares_targets_answers_which_target_first() -> None:
    # The recorded two-target run, as a scenario with `compare: targets` would have stored it.
    plain = views("two-targets")
    asked = [dataclasses.replace(v, manifest=dataclasses.replace(
        v.manifest, scenario=dataclasses.replace(v.manifest.scenario, compare="targets"))) for v in plain]
    (tools,), (targets,) = model.build(plain).verdicts, model.build(asked).verdicts
    assert not tools.headline.startswith("No target")
    assert targets.headline.startswith("No target served more than another beyond the noise in either like-for-like "
                                       "comparison (same tool, concurrency and keep-alive); the highest was ")
    assert "Across targets, for each tool" not in targets.headline  # said once, as the answer
