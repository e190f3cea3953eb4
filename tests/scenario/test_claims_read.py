"""`claims:` in a scenario: read into frozen claims (targets kept as the labels their results
carry), every problem one line naming file:line and key; and claims.json, written by `run` and
read back as untrusted input."""
import json
import re
from pathlib import Path

import pytest

from conftest import REPO
from toolbench.errors import ScenarioError, StoreError
from toolbench.scenario import claims as scenario_claims
from toolbench.scenario import read as scenario
from toolbench.scenario.claims import Claim, ClaimSet, Relation, Sides
from toolbench.scenario.criteria.spec import Selector

BASE = """name: s
targets:
  threads: {server: socket-threads, sleep: 0.5, label: thread per connection}
  gevent: {server: socket-gevent, sleep: 0.5}
matrix: {tool: [ab, fast], concurrency: [500, 1000], keepalive: [true, false]}
tools:
  fast: {use: engine}
claims:
"""
STUDIES = sorted((REPO / "scenarios" / "studies").glob("0*.yaml"))


def load(tmp_path: Path, claims: str) -> scenario.Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(BASE + claims)
    return scenario.load(path)


def refused(tmp_path: Path, claims: str) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        load(tmp_path, claims)
    return list(getattr(caught.value, "problems", [str(caught.value)]))


def test_claims_read_into_typed_claims_with_targets_as_their_results_name_them(tmp_path):
    loaded = load(tmp_path, """\
  - claim: gevent beats threads
    article: 1890
    figure: p99_ms
    higher: {target: threads, concurrency: [500, 1000]}
    lower: {target: gevent, keepalive: false}
    by_at_least: 1.5
  - claim: ab and fast alike
    alike: [{tool: ab}, {tool: fast}]
  - claim: Could not be made to work
    article: "(not measured)"
  - claim: fast does not go past ab
    at_most: [{tool: fast}, {tool: ab}]
""")
    first, alike, bare, at_most = loaded.claims
    assert first == Claim("gevent beats threads", "1890", "p99_ms",
                          Sides(Selector(target=("thread per connection",), concurrency=(500, 1000)),
                                Selector(target=("gevent",), keepalive=(False,)), 1.5),
                          where=f"{tmp_path / 's.yaml'}:9")
    assert alike.sides == Sides(Selector(tool=("ab",)), Selector(tool=("fast",)), relation=Relation.ALIKE)
    assert at_most.sides == Sides(Selector(tool=("fast",)), Selector(tool=("ab",)), relation=Relation.AT_MOST)
    assert alike.figure == "rps"
    assert bare == Claim("Could not be made to work", "(not measured)", where=f"{tmp_path / 's.yaml'}:17")


def test_criteria_name_a_target_as_the_scenario_does_and_select_it_by_its_label(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(BASE.replace("claims:\n", "criteria:\n  - {expect: error_rate < 0.01, target: threads}\n"))
    (criterion,) = scenario.load(path).criteria
    assert criterion.selector.target == ("thread per connection",)  # what the results carry


@pytest.mark.parametrize("claims, line, says", [
    ("  - claim: x\n    colour: red\n", 10, "claims[0].colour: unknown key (expected one of claim, article"),
    ("  - claim: x\n    figure: rsp\n    higher: {tool: ab}\n    lower: {tool: fast}\n", 10,
     "claims[0].figure: unknown figure 'rsp' (known: rps,"),
    ("  - claim: x\n    higher: {tool: wrk}\n    lower: {tool: ab}\n", 10,
     "claims[0].higher.tool: no tool 'wrk' in this scenario (known: ab, fast)"),
    ("  - claim: x\n    higher: {target: thread per connection}\n    lower: {tool: ab}\n", 10,
     "claims[0].higher.target: no target 'thread per connection' in this scenario (known: gevent, threads)"),
    ("  - claim: x\n    higher: {keepalive: maybe}\n    lower: {tool: ab}\n", 10,
     "claims[0].higher.keepalive: expected true or false"),
    ("  - claim: x\n    higher: {tool: ab, colour: red}\n    lower: {tool: fast}\n", 10,
     "claims[0].higher.colour: unknown key (expected one of tool, target, concurrency, keepalive, rate)"),
    ("  - claim: x\n    higher: {tool: ab}\n", 10, "claims[0].higher: a claim checked by a run gives both"),
    ("  - claim: x\n    higher: {tool: ab}\n    lower: {tool: ab}\n", 11,
     "claims[0].lower: `higher` and `lower` select the same cells"),
    ("  - claim: x\n    higher: {tool: ab}\n    lower: {tool: fast}\n    by_at_least: 1\n", 12,
     "claims[0].by_at_least: expected a ratio above 1"),
    ("  - claim: x\n    figure: p99_ms\n", 10, "claims[0].figure: only with `higher` and `lower`"),
    ("  - claim: x\n    alike: [{tool: ab}]\n", 10, "claims[0].alike: expected two selectors"),
    ("  - claim: x\n    alike: [{tool: ab}, {tool: fast}]\n    higher: {tool: ab}\n", 11,
     "claims[0].higher: `alike` names both sides of the claim: no `higher` beside it"),
    ("  - claim: x\n    alike: [{tool: ab}, {tool: fast}]\n    at_most: [{tool: ab}, {tool: fast}]\n", 11,
     "claims[0].at_most: `alike` names both sides of the claim: no `at_most` beside it"),
    ("  - claim: x\n    at_most: [{tool: ab}, {tool: ab}]\n", 10,
     "claims[0].at_most[1]: both selectors of `at_most` select the same cells"),
    ("  - article: 5\n", 9, "claims[0]: missing required key 'claim'"),
    ("  - claim: '" + "x" * 301 + "'\n", 9, "claims[0].claim: expected at most 300 characters"),
    ("  - claim: \"two\\nlines\"\n", 9, "claims[0].claim: expected one line of printable text"),
    ("  - claim: x\n    article: ''\n", 10, "claims[0].article: expected a non-empty text"),
])
def test_a_bad_claim_is_one_line_naming_file_line_and_key(tmp_path, claims, line, says):
    problems = refused(tmp_path, claims)
    assert len(problems) == 1
    assert problems[0].startswith(f"{tmp_path / 's.yaml'}:{line}: {says}"), problems[0]
    assert "\n" not in problems[0]


def test_every_bad_claim_is_said_not_only_the_first(tmp_path):
    problems = refused(tmp_path, "  - claim: x\n    colour: red\n  - claim: y\n    higher: {tool: wrk}\n"
                                 "    lower: {tool: ab}\n  - claim: fine\n")
    assert [p.split(": ")[1] for p in problems] == ["claims[0].colour", "claims[1].higher.tool"]


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_each_study_scenario_has_claims_and_checks_most_of_them(path):
    loaded = scenario.load(path)
    assert len(loaded.claims) >= 5
    assert sum(c.sides is not None for c in loaded.claims) > len(loaded.claims) / 2


def test_claims_json_keeps_the_claims_as_the_scenario_read_them(tmp_path):
    claims = scenario.load(STUDIES[-1]).claims  # study 003: a target with a label, alike, by_at_least
    scenario_claims.save(tmp_path, ClaimSet(claims, "scenarios/studies/003-socket-servers.yaml"))
    back = scenario_claims.load(tmp_path)
    assert back is not None and back.stored and back.source == "scenarios/studies/003-socket-servers.yaml"
    assert [(c.claim, c.article, c.figure, c.sides) for c in back.claims] == \
        [(c.claim, c.article, c.figure, c.sides) for c in claims]
    scenario_claims.forget(tmp_path)
    assert scenario_claims.load(tmp_path) is None


def stored(tmp_path: Path, **change) -> Path:
    entry = {"claim": "x", "article": "", "figure": "rps", "higher": {"tool": ["ab"]}, "lower": {"tool": ["fast"]},
             "by_at_least": None}
    data = {"claims_version": 1, "source": "s.yaml", "claims": [entry | change]}
    (tmp_path / scenario_claims.FILE).write_text(json.dumps(data))
    return tmp_path


@pytest.mark.parametrize("change, says", [
    ({"figure": "__class__"}, "claims[0].figure: unknown figure"),
    ({"claim": "<b>\x1b[2J</b>"}, "claims[0].claim: expected one line of printable text"),
    ({"higher": {"tool": "ab"}}, "claims[0].higher.tool: not a list"),
    ({"higher": {"tool": ["ab"], "colour": ["red"]}}, "claims[0].higher: expected a mapping of tool"),
    ({"lower": {"concurrency": [True]}}, "claims[0].lower.concurrency: not a list"),
    ({"by_at_least": 0.5}, "claims[0].by_at_least: expected a ratio above 1"),
    ({"alike": [{"tool": ["ab"]}], "higher": None, "lower": None}, "claims[0].alike: expected two selectors"),
    ({"at_most": [{"tool": ["ab"]}, {"tool": "fast"}], "higher": None, "lower": None},
     "claims[0].at_most.tool: not a list"),
    ({"at_most": [{"tool": ["ab"]}, {"tool": ["fast"]}]},
     "claims[0]: expected one of higher and lower, alike, at_most"),
])
def test_a_stored_claims_file_is_read_as_untrusted(tmp_path, change, says):
    with pytest.raises(StoreError, match=re.escape(f"unreadable: {says}")):
        scenario_claims.load(stored(tmp_path, **change))


def test_a_claims_file_of_another_version_is_refused(tmp_path):
    (tmp_path / scenario_claims.FILE).write_text(json.dumps({"claims_version": 3, "source": "s", "claims": []}))
    with pytest.raises(StoreError, match="claims_version 3, this toolbench reads 1 and 2"):
        scenario_claims.load(tmp_path)


def test_a_claims_file_that_is_a_link_is_not_followed(tmp_path):
    outside, run = tmp_path / "outside", tmp_path / "run"
    outside.mkdir()
    run.mkdir()
    (run / scenario_claims.FILE).symlink_to(stored(outside) / scenario_claims.FILE)
    with pytest.raises(StoreError):
        scenario_claims.load(run)


def test_a_profile_that_runs_fewer_tools_may_keep_claims_on_the_others_but_not_on_unknown_ones(tmp_path):
    # The study 001 case: its quick profile leaves Locust on 4 processes out, its claims name it.
    quick = "profiles:\n  quick: {matrix: {tool: [ab], concurrency: [500]}}\n"
    path = tmp_path / "s.yaml"
    path.write_text(BASE.replace("claims:\n", quick + "claims:\n")
                    + "  - claim: x\n    higher: {tool: fast}\n    lower: {tool: ab}\n")
    (claim,) = scenario.load(path, profile="quick").claims
    assert claim.sides.higher == Selector(tool=("fast",))
    assert scenario.load(path, profile="quick").matrix.tool == ("ab",)
    path.write_text(path.read_text().replace("{tool: fast}", "{tool: wrk}"))
    with pytest.raises(ScenarioError, match=r"s.yaml:\d+: claims\[0\].higher.tool: no tool 'wrk' in this scenario "
                                            r"\(known: ab, fast\)"):
        scenario.load(path, profile="quick")
