"""A study's claims checked on stored runs (the published studies' and the recorded fixtures'):
each side's best point with its noise, the verdicts, disturbed cells left out; the section's text
escaped in the page; and the Markdown table the study pages carry, regenerated and compared."""
import dataclasses
import re
import shutil
from pathlib import Path

import pytest

from conftest import REPO
from toolbench.cli.main import main
from toolbench.record import stats, store
from toolbench.record.schema import Outcome, Status
from toolbench.report import claims_section, groups, model, render
from toolbench.report.claims_check import Verdict, check, judge
from toolbench.report.context import Context
from toolbench.scenario import claims as scenario_claims
from toolbench.scenario.claims import Claim, ClaimSet, Relation, Sides
from toolbench.scenario.criteria.spec import Selector

STUDIES = REPO / "tests" / "fixtures" / "studies"  # study runs as they were published
STUDY_001 = STUDIES / "study-001-tool-comparison-20261130T201044Z"
STUDY_003 = STUDIES / "study-003-socket-servers-20261202T173646Z"
RUNS = REPO / "tests" / "fixtures" / "runs"
AB_KA = Selector(tool=("ab",), keepalive=(True,))
AB_CLOSE = Selector(tool=("ab",), keepalive=(False,))
MARKER = re.compile(r"<!-- claims: toolbench claims (\S+) --claims-from (\S+) -->\n(.*?)<!-- end of claims", re.S)


def results(run: Path) -> list:
    return store.RunDir.open(run).results()


def claim(higher: Selector, lower: Selector, figure: str = "rps", by_at_least: float | None = None,
          relation: Relation = Relation.HIGHER) -> Claim:
    return Claim("a claim", figure=figure, sides=Sides(higher, lower, by_at_least, relation))


def test_keep_alive_helps_ab_in_study_001_beyond_the_noise_of_both():
    found = check(claim(AB_KA, AB_CLOSE, by_at_least=2), results(STUDY_001))
    assert found.verdict is Verdict.REPRODUCED
    assert found.ours == "ab c200 ka 9,056/s ±18 % vs ab c10 close 3,194/s ±35 % (2.8×)"
    assert (found.higher.figure.value, found.lower.figure.value) == pytest.approx((9056, 3194), abs=1)


@pytest.mark.parametrize("ratio, verdict", [
    (2.8, Verdict.REPRODUCED),  # 9,056 / 3,194 = 2.84
    (4, Verdict.WITHIN_NOISE),  # short, but 9,056 + 18 % over 3,194 - 35 % reaches 5.1
    (6, Verdict.NOT_REPRODUCED),  # short even at the ends of both noises
])
def test_a_ratio_short_of_the_claim_is_within_the_noise_or_clearly_short(ratio, verdict):
    assert check(claim(AB_KA, AB_CLOSE, by_at_least=ratio), results(STUDY_001)).verdict is verdict


def test_a_lower_side_higher_beyond_the_noise_is_not_reproduced():
    python = Selector(tool=("locust-http", "locust-fast", "locust-fast-2p", "locust-urllib3", "locust-socket"))
    found = check(claim(Selector(tool=("jmeter",)), python), results(STUDY_001))
    assert found.verdict is Verdict.NOT_REPRODUCED
    assert found.ours.startswith("jmeter c10 ka 183/s ±36 % vs locust-socket c10 ka 2,782/s ±21 % (0.07×)")


def test_a_side_without_a_cell_that_finished_ok_is_not_measured_and_said_which():
    http_load = Selector(tool=("http_load",))
    found = check(claim(http_load, AB_CLOSE), results(STUDY_001))
    assert found.verdict is Verdict.NOT_MEASURED
    assert found.ours == "higher (tool http_load): no cell finished ok (4 unsupported, 4 tool missing)"
    nowhere = check(claim(AB_KA, Selector(tool=("ab",), concurrency=(7,))), results(STUDY_001))
    assert nowhere.verdict is Verdict.NOT_MEASURED
    assert nowhere.ours == "lower (tool ab, concurrency 7): no cell of the run matches it"


def test_a_claim_without_sides_is_not_checked_by_a_run():
    assert check(Claim("could not be made to work"), results(STUDY_001)).verdict is Verdict.NOT_CHECKED


def test_a_latency_sides_best_point_is_its_lowest():
    # JMeter's own mean at c10 with keep-alive (docs/studies/001.md: 44.5 ms; 465 ms at c200).
    found = check(claim(Selector(tool=("jmeter",), keepalive=(True,)), AB_KA, figure="mean_ms"), results(STUDY_001))
    assert found.ours.startswith("jmeter c10 ka 44.51 ms (noise not measured) vs ab c")
    assert found.verdict is Verdict.REPRODUCED


def test_sides_said_alike_are_reproduced_within_the_noise_and_not_beyond_it():
    pool = Selector(target=("gevent Pool(500)",))
    flat = claim(dataclasses.replace(pool, concurrency=(1000,)), dataclasses.replace(pool, concurrency=(1500,)),
                 relation=Relation.ALIKE)
    found = check(flat, results(STUDY_003))
    assert found.verdict is Verdict.REPRODUCED
    assert found.ours.startswith("gevent Pool(500) c1000 902/s ±0.0 % vs gevent Pool(500) c1500 863/s ±4.4 %")
    at_500 = claim(Selector(target=("thread per connection",), concurrency=(500,)),
                   Selector(target=("gevent",), concurrency=(500,)), relation=Relation.ALIKE)
    apart = check(at_500, results(STUDY_003))  # 855/s ±2.2 % against 926/s ±0.2 %: beyond both noises
    assert apart.verdict is Verdict.NOT_REPRODUCED, apart.ours
    assert check(claim(AB_KA, AB_CLOSE, relation=Relation.ALIKE), results(STUDY_001)).verdict is Verdict.NOT_REPRODUCED


def test_a_side_said_at_most_the_other_is_reproduced_below_it_or_within_the_noise_not_above_it():
    # Study 001, ab: keep-alive c200 9,056/s ±3.1 % against close c10 3,194/s ±2.0 %, far apart.
    assert check(claim(AB_CLOSE, AB_KA, relation=Relation.AT_MOST), results(STUDY_001)).verdict is Verdict.REPRODUCED
    assert check(claim(AB_KA, AB_CLOSE, relation=Relation.AT_MOST), results(STUDY_001)).verdict \
        is Verdict.NOT_REPRODUCED
    tie = results(RUNS / "tie")  # ab and the engine, the same load, within the noise of each other
    for first, second in ((("ab",), ("engine",)), (("engine",), ("ab",))):
        found = check(claim(Selector(tool=first), Selector(tool=second), relation=Relation.AT_MOST), tie)
        assert found.verdict is Verdict.REPRODUCED, found.ours


def test_a_sides_repetitions_are_merged_into_its_point():
    tie = results(RUNS / "tie")  # ab and the engine, two repetitions each, the same load
    found = check(claim(Selector(tool=("ab",)), Selector(tool=("engine",)), relation=Relation.ALIKE), tie)
    point = next(p for p in groups.points([("", tie)]) if p.key.tool == "ab")
    assert found.higher.figure == point.rate and found.higher.figure.repetitions == 2
    assert found.verdict is Verdict.REPRODUCED


def test_disturbed_cells_are_left_out_and_said():
    disturbed = [dataclasses.replace(r, outcome=Outcome(Status.DISTURBED, error="a busy neighbour"))
                 if r.identity.cell_id == "ab-c200-ka-rep1" else r for r in results(STUDY_001)]
    found = check(claim(AB_KA, AB_CLOSE), disturbed)
    assert found.ours.startswith("ab c10 ka 8,650/s")  # the next best point; c200's 9,056 is left out
    assert found.ours.endswith("; 1 disturbed cell left out")


@pytest.mark.parametrize("higher, lower, by, verdict", [
    (110.0, 100.0, None, Verdict.WITHIN_NOISE),  # 10 apart, 5.5 + 5 of noise, under 5 % of the larger
    (130.0, 100.0, None, Verdict.REPRODUCED),
    (100.0, 130.0, None, Verdict.NOT_REPRODUCED),
    (130.0, 100.0, 1.2, Verdict.REPRODUCED),
    (130.0, 100.0, 1.4, Verdict.WITHIN_NOISE),  # (130 + 6.5) / (100 - 5) = 1.44
    (130.0, 100.0, 1.5, Verdict.NOT_REPRODUCED),
    (108.0, 100.0, 4.0, Verdict.NOT_REPRODUCED),  # within each other's noise, yet 4x is out of reach
    (108.0, 100.0, 1.1, Verdict.WITHIN_NOISE),  # (108 + 5) / (100 - 5) = 1.19: within reach
])
def test_the_verdict_on_two_figures_with_their_noise(higher, lower, by, verdict):
    noisy = lambda v: stats.Estimate(v, 5.0, "3 repetitions", 3)  # noqa: E731
    assert judge(noisy(higher), noisy(lower), by) is verdict


def rendered(run: Path, given: ClaimSet | None = None) -> tuple[object, str]:
    """The section built from `run` and the page the report's template makes of it alone."""
    views = render.load_views([store.RunDir.open(run)], run)
    section = claims_section.claims_section(Context.of(views), given)
    data = model.build(views, given)
    assert section is not None
    return section, render.page("report.html.j2", report=dataclasses.replace(data, sections=(section,)))


def test_the_section_shows_the_stored_claims_with_their_text_escaped(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUNS / "mixed-keepalive", run)
    hostile = "<script>alert(1)</script> & keep-alive"
    scenario_claims.save(run, ClaimSet((Claim(hostile, "<img src=x onerror=alert(2)>", "rps",
                                              Sides(AB_KA, AB_CLOSE)), Claim("unchecked")), "<b>s.yaml</b>"))
    section, html = rendered(run)
    assert section.id == "claims" and section.title == "The study's claims"
    assert [r.anchor for r in section.tables[0].rows] == ["claim-1", "claim-2"]
    assert [r.values[3].text for r in section.tables[0].rows] == ["reproduced", "not checked by a run"]
    assert "<script>alert(1)" not in html and "<img src=x" not in html and "<b>s.yaml" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; keep-alive" in html
    assert "stored with the run (claims.json), from &lt;b&gt;s.yaml&lt;/b&gt;" in html


def test_claims_given_from_a_scenario_say_so_and_a_run_without_claims_has_no_section(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUNS / "mixed-keepalive", run)
    views = render.load_views([store.RunDir.open(run)], run)
    assert claims_section.claims_section(Context.of(views)) is None
    given = ClaimSet((Claim("ab is not measured at c7", sides=Sides(Selector(concurrency=(7,)), AB_CLOSE)),),
                     "given.yaml")
    section, _ = rendered(run, given)
    assert "read from given.yaml, given with --claims-from rather than stored with the run" in section.intro
    (verdict,) = [r.values[3] for r in section.tables[0].rows]
    assert (verdict.text, verdict.flag) == ("not measured", "unknown")


@pytest.mark.parametrize("page", ["000", "001", "003"])
def test_each_study_pages_claims_table_is_the_one_toolbench_claims_prints(page, capsys):
    text = (REPO / "docs" / "studies" / f"{page}.md").read_text()
    found = MARKER.search(text)
    assert found, f"docs/studies/{page}.md has no generated claims table"
    run, scenario, table = found.groups()
    assert main(["claims", str(REPO / run), "--claims-from", str(REPO / scenario)]) == 0
    assert capsys.readouterr().out == table


def test_the_markdown_table_escapes_what_would_break_a_row():
    found = check(Claim("a | b <i>x</i> \\ c", "line\x1bone"), [])
    assert claims_section.markdown([found]).splitlines()[2] == \
        "| a \\| b &lt;i>x&lt;/i> \\\\ c | line one | — | **not checked by a run** | — |"
