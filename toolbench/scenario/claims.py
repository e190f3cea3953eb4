"""`claims:` in a scenario: what a study claimed, in its words, with the article's figure as it gave
it and, where a run can check the claim, the cells whose figure it says is higher and those it
says is lower (each a criteria Selector, the figure a criteria figure name).

    claims:
      - claim: Keep-alive helps a lot
        article: "ab 3,000 -> 9,000 requests/s"   # optional: as the article gave it
        figure: rps                                # a criteria figure (criteria.figures); default rps
        higher: {tool: ab, keepalive: true}        # a Selector: tool, target, concurrency, keepalive, rate
        lower: {tool: ab, keepalive: false}
        by_at_least: 2                             # optional: higher / lower at least this
      - claim: At -c 500 threads and gevent serve alike
        alike: [{target: threads, concurrency: 500}, {target: gevent, concurrency: 500}]
      - claim: Its rate does not go up past -c 1000
        at_most: [{target: pool, concurrency: 1500}, {target: pool, concurrency: 1000}]
      - claim: The raw-socket client could not be made to work   # no sides: not checked by a run

`toolbench run` keeps them in the run folder as claims.json (versioned), which the report reads
back; a run made before claims existed takes them from a scenario file (`--claims-from`). The
report checks them (toolbench.report.claims_check). A target is named in the scenario and kept
as the label its results carry (TargetSpec.display), which is what a stored result says."""
from __future__ import annotations

import dataclasses
import enum
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Mapping

from toolbench.errors import StoreError
from toolbench.record import runfiles
from toolbench.scenario.criteria.figures import FIGURES
from toolbench.scenario.criteria.spec import SELECTORS, Selector, selector_of
from toolbench.scenario.yamlread import Node, attempt

FILE = "claims.json"
VERSION = 2  # 2: `at_most`; a version 1 file reads as it always did
READS = (1, 2)
ENTRY_KEYS = ("claim", "article", "figure", "higher", "lower", "by_at_least", "alike", "at_most")
DEFAULT_FIGURE = "rps"
# Past these a claim is a paragraph, not a table's cell: the page's prose holds the rest.
MAX_CLAIM = 300
MAX_ARTICLE = 200
MAX_CLAIMS = 200
MAX_RATIO = 1000.0
MAX_VALUES = 100  # values of one selector key, in claims.json


class Relation(str, enum.Enum):
    """What a claim says of its two sides' figures."""

    HIGHER = "higher"  # the first (`higher`) above the second (`lower`) beyond the noise
    ALIKE = "alike"  # the same within the noise
    # The first not above the second: below it or within the noise ("its rate does not go up").
    AT_MOST = "at_most"


# The relations given as one key naming both sides (`alike: [A, B]`), not as `higher` and `lower`.
PAIRED = tuple(r for r in Relation if r is not Relation.HIGHER)


@dataclass(frozen=True)
class Sides:
    """The cells a claim says are higher on its figure, and those it says are lower; for the
    other relations `higher` is the first selector given and `lower` the second."""

    higher: Selector
    lower: Selector
    by_at_least: float | None = None  # higher / lower at least this; None: any amount beyond the noise
    relation: Relation = Relation.HIGHER


@dataclass(frozen=True)
class Claim:
    claim: str  # the study's words
    article: str = ""  # the article's figure as it gave it; "" when it gave none
    figure: str = DEFAULT_FIGURE
    sides: Sides | None = None  # None: not checked by a run
    where: str = ""  # file:line, for a reader of the scenario

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"claim": self.claim, "article": self.article, "figure": self.figure}
        if self.sides is not None and self.sides.relation is not Relation.HIGHER:
            data[self.sides.relation.value] = [self.sides.higher.to_dict(), self.sides.lower.to_dict()]
        elif self.sides is not None:
            data |= {"higher": self.sides.higher.to_dict(), "lower": self.sides.lower.to_dict(),
                     "by_at_least": self.sides.by_at_least}
        return data


@dataclass(frozen=True)
class ClaimSet:
    """A scenario's claims and where they were read: `stored` when from the run's claims.json."""

    claims: tuple[Claim, ...]
    source: str  # the scenario file they were written in
    stored: bool = False


def text_problem(value: object, most: int) -> str | None:
    """Why `value` is not a claim's text: one printable line of at most `most` characters."""
    if not isinstance(value, str) or not value.strip():
        return "expected a non-empty text"
    if len(value) > most:
        return f"expected at most {most} characters, got {len(value)}"
    if not value.isprintable():
        return "expected one line of printable text"
    return None


def from_node(node: Node, tools: Collection[str], targets: Mapping[str, str]) -> tuple[Claim, ...]:
    """The scenario's `claims:` list; `targets` maps each target's name to the label its results carry."""
    children = list(node.elements())
    if len(children) > MAX_CLAIMS:
        raise node.error(f"expected at most {MAX_CLAIMS} claims, got {len(children)}")
    # Each claim is read on its own: while collecting, a bad one is noted and the others still read.
    read = [attempt(lambda c=child: _claim(c, tools, targets), None) for child in children]
    return tuple(claim for claim in read if claim is not None)


def _claim(node: Node, tools: Collection[str], targets: Mapping[str, str]) -> Claim:
    keys = node.items(ENTRY_KEYS)
    if "claim" not in keys:
        raise node.error("missing required key 'claim' (the study's words)")
    claim = _text(keys["claim"], MAX_CLAIM)
    article = _text(keys["article"], MAX_ARTICLE) if "article" in keys else ""
    where = f"{node.file}:{node.line}"
    sides = _sides(keys, tools, targets)
    if sides is None:
        for key in ("figure", "by_at_least"):
            if key in keys:
                raise keys[key].error("only with `higher` and `lower` (or `alike`, `at_most`): a claim without "
                                      "them is not checked by a run")
        return Claim(claim, article, where=where)
    figure = _figure(keys["figure"]) if "figure" in keys else DEFAULT_FIGURE
    return Claim(claim, article, figure, sides, where)


def _sides(keys: dict[str, Node], tools: Collection[str], targets: Mapping[str, str]) -> Sides | None:
    paired = [r.value for r in PAIRED if r.value in keys]
    if paired:
        return _paired(keys, paired, tools, targets)
    given = [k for k in ("higher", "lower") if k in keys]
    if len(given) == 1:
        missing = "lower" if given == ["higher"] else "higher"
        raise keys[given[0]].error(f"a claim checked by a run gives both `higher` and `lower`; `{missing}` is missing")
    if not given:
        return None
    higher, lower = (_selector(keys[k], tools, targets) for k in ("higher", "lower"))
    if higher == lower:
        raise keys["lower"].error("`higher` and `lower` select the same cells")
    by_at_least = _ratio(keys["by_at_least"]) if "by_at_least" in keys else None
    return Sides(higher, lower, by_at_least)


def _paired(keys: dict[str, Node], paired: list[str], tools: Collection[str], targets: Mapping[str, str]) -> Sides:
    """`alike: [A, B]` or `at_most: [A, B]`: two selectors, the relation in the key."""
    name = paired[0]
    for key in ("higher", "lower", "by_at_least", *paired[1:]):
        if key in keys:
            raise keys[key].error(f"`{name}` names both sides of the claim: no `{key}` beside it")
    node = keys[name]
    pair = list(node.elements())
    if len(pair) != 2:
        raise node.error(f"expected two selectors (the cells compared), got {len(pair)}")
    first, second = (_selector(child, tools, targets) for child in pair)
    if first == second:
        raise pair[1].error(f"both selectors of `{name}` select the same cells")
    return Sides(first, second, relation=Relation(name))


def _text(node: Node, most: int) -> str:
    value = node.scalar()
    if isinstance(value, (int, float)) and not isinstance(value, bool):  # `article: 2817`: a figure as given
        value = node.node.value
    why = text_problem(value, most)
    if why:
        raise node.error(why)
    return value


def _figure(node: Node) -> str:
    name = node.string()
    if name not in FIGURES:
        raise node.error(f"unknown figure {name!r} (known: {', '.join(FIGURES)})")
    return name


def _ratio(node: Node) -> float:
    value = node.number(MAX_RATIO)
    if value <= 1:
        raise node.error(f"expected a ratio above 1 (higher / lower), got {value:g}")
    return value


def _selector(node: Node, tools: Collection[str], targets: Mapping[str, str]) -> Selector:
    found = selector_of(node.items(SELECTORS), tools, targets)
    return dataclasses.replace(found, target=tuple(targets[name] for name in found.target))


# claims.json -------------------------------------------------------------------------------------


def save(run_dir: Path, claims: ClaimSet) -> None:
    runfiles.save_json(run_dir, FILE, {"claims_version": VERSION, "source": claims.source,
                                       "claims": [c.to_dict() for c in claims.claims]})


def forget(run_dir: Path) -> None:
    """No claims now: an earlier part of a resumed run may have kept those of an older scenario."""
    runfiles.forget(run_dir, FILE)


def load(run_dir: Path) -> ClaimSet | None:
    """The claims stored with the run; None when it has none (no claims, or an older run). Each
    value is checked as the scenario's were: the file is from anyone who shares a run."""
    path = run_dir / FILE
    if not path.is_file() and not path.is_symlink():  # a link is read by runfiles, which refuses it
        return None
    try:
        data = json.loads(runfiles.read_text(run_dir, FILE))
        if data["claims_version"] not in READS:
            reads = " and ".join(map(str, READS))
            raise ValueError(f"claims_version {data['claims_version']!r}, this toolbench reads {reads}")
        source = _stored_text(data["source"], 1000, "source")
        entries = data["claims"]
        if not isinstance(entries, list) or len(entries) > MAX_CLAIMS:
            raise ValueError(f"`claims` is not a list of at most {MAX_CLAIMS}")
        return ClaimSet(tuple(_stored_claim(e, n) for n, e in enumerate(entries)), source, stored=True)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, StoreError) as exc:
        raise StoreError(f"{path}: unreadable: {exc}") from None


def _stored_claim(data: dict[str, Any], n: int) -> Claim:
    where = f"claims[{n}]"
    claim = _stored_text(data["claim"], MAX_CLAIM, f"{where}.claim")
    article = data.get("article") or ""
    article = _stored_text(article, MAX_ARTICLE, f"{where}.article") if article else ""
    figure = data.get("figure", DEFAULT_FIGURE)
    if figure not in FIGURES:
        raise ValueError(f"{where}.figure: unknown figure {str(figure)[:40]!r}")
    paired = [r for r in PAIRED if data.get(r.value) is not None]
    if len(paired) > 1 or (paired and (data.get("higher") is not None or data.get("lower") is not None)):
        raise ValueError(f"{where}: expected one of higher and lower, {', '.join(r.value for r in PAIRED)}")
    if paired:
        (relation,) = paired
        pair = data[relation.value]
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"{where}.{relation.value}: expected two selectors")
        first, second = (_stored_selector(s, f"{where}.{relation.value}") for s in pair)
        return Claim(claim, article, figure, Sides(first, second, relation=relation), where)
    if data.get("higher") is None and data.get("lower") is None:
        return Claim(claim, article, figure, where=where)
    ratio = data.get("by_at_least")
    if ratio is not None and (isinstance(ratio, bool) or not isinstance(ratio, (int, float))
                              or not 1 < ratio <= MAX_RATIO):
        raise ValueError(f"{where}.by_at_least: expected a ratio above 1, got {str(ratio)[:40]!r}")
    higher, lower = (_stored_selector(data[key], f"{where}.{key}") for key in ("higher", "lower"))
    sides = Sides(higher, lower, None if ratio is None else float(ratio))
    return Claim(claim, article, figure, sides, where)


def _stored_text(value: object, most: int, where: str) -> str:
    why = text_problem(value, most)
    if why:
        raise ValueError(f"{where}: {why}")
    return str(value)


def _stored_selector(data: dict[str, Any], where: str) -> Selector:
    if not isinstance(data, dict) or set(data) - set(SELECTORS):
        raise ValueError(f"{where}: expected a mapping of {', '.join(SELECTORS)}")
    checks = {"tool": lambda v: text_problem(v, 200) is None, "target": lambda v: text_problem(v, 200) is None,
              "concurrency": lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0,
              "keepalive": lambda v: isinstance(v, bool),
              "rate": lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)
                                              and math.isfinite(v) and v >= 0)}
    values = {}
    for key, listed in data.items():
        if not isinstance(listed, list) or not 0 < len(listed) <= MAX_VALUES or not all(map(checks[key], listed)):
            raise ValueError(f"{where}.{key}: not a list of {key} values")
        values[key] = tuple(float(v) if key == "rate" and v is not None else v for v in listed)
    return Selector(**values)
