"""The study's claims section: each claim of the scenario, the article's figure, ours with its noise,
the verdict (toolbench.report.claims_check) and the evidence the run recorded for it
(toolbench.report.claims_evidence); and the same table as Markdown, which the study pages
(docs/studies/) take from `toolbench claims`, so that the pages and the report say the same.

The claims are those `toolbench run` stored with the run (claims.json), or those of a scenario file
given for a run made before claims existed (`report --claims-from`), and the section says which
it shows. The report opens with this table (toolbench.report.glance)."""
from __future__ import annotations

from collections import Counter

from toolbench.report.claims_check import Checked, Verdict, check_all
from toolbench.report.context import Context, RunView
from toolbench.report.view import Column, Row, Section, Table, Value, text
from toolbench.scenario import claims as scenario_claims
from toolbench.scenario.claims import ClaimSet

# Marks beside a verdict (render.FLAG_MARKS): never colour alone.
FLAGS = {Verdict.NOT_REPRODUCED: "disagrees", Verdict.NOT_MEASURED: "unknown"}
HEADERS = ("claim (the study)", "the article's figure", "ours, with noise", "verdict",
           "evidence (this run's counters)")
EVIDENCE_TITLE = ("what the run recorded of each side's best point, a value per repetition: the target machine's "
                  "listen overflows, SYN retransmits and resets, the target's error-log lines, failed requests by "
                  "class and statuses other than 2xx; only what happened is named")

def claims_of(run: RunView, given: ClaimSet | None = None) -> ClaimSet | None:
    """The claims given for this report, else those stored with the run; None when neither."""
    found = given
    if found is None and run.path is not None:
        found = scenario_claims.load(run.path)
    return found if found is not None and found.claims else None


def claims_section(ctx: Context, given: ClaimSet | None = None) -> Section | None:
    """None when no run of the report has claims: the section is left out. `given`: a scenario's
    claims, shown instead of those stored with the runs (`report --claims-from`)."""
    found = [(i, run, claims) for i, run in enumerate(ctx.runs) if (claims := claims_of(run, given)) is not None]
    if not found:
        return None
    checked = [(i, run, c) for i, run, claims in found for c in check_all(claims.claims, run.results)]
    cols = ([Column("run")] if ctx.several else []) + [
        Column(HEADERS[0]), Column(HEADERS[1], title="as the article gave it, on its own machine"),
        Column(HEADERS[2], title="each side's best point (all its repetitions merged) and its noise; "
                                 "the higher side first, then the ratio"),
        Column(HEADERS[3]), Column(HEADERS[4], title=EVIDENCE_TITLE)]
    rows = tuple(_row(ctx, run, c, anchor(i, n, ctx.several)) for n, (i, run, c) in enumerate(checked, 1))
    return Section("claims", "The study's claims", intro=_intro([claims for _, _, claims in found], checked),
                   tables=(Table(tuple(cols), rows, css="claims"),))


def _intro(sets: list[ClaimSet], checked: list[tuple[int, RunView, Checked]]) -> str:
    sources = list(dict.fromkeys((s.source, s.stored) for s in sets))
    said = " ".join(f"The claims were stored with the run (claims.json), from {source}." if stored else
                    f"The claims are read from {source}, given with --claims-from rather than stored with the run."
                    for source, stored in sources)
    tally = Counter(c.verdict for _, _, c in checked)
    counts = ", ".join(f"{tally[v]} {v.value}" for v in Verdict if tally[v])
    return ("What the study claimed, checked on this run. Each side of a claim is the cells it names; its figure "
            "is its best point (the highest rate; the lowest latency, cost or error rate), every repetition "
            "merged, with its noise. A claim is reproduced when its higher side beats its lower beyond the noise "
            "of both (and by the ratio it gives); not reproduced when the lower side is higher beyond the noise, "
            "or the ratio falls short by more than the noise; two sides said to be alike are reproduced within "
            "the noise of both, and a side said to be at most the other when it is not above it beyond the noise. "
            "Cells disturbed by other work on the machine are left out. "
            f"{said} {counts}.")


def anchor(run: int, n: int, several: bool) -> str:
    """The row's id: made of numbers only, whatever the claim's text (the nth row of the table)."""
    return f"claim-{run + 1}-{n}" if several else f"claim-{n}"


def _row(ctx: Context, run: RunView, c: Checked, row_id: str) -> Row:
    values = ([text(run.label)] if ctx.several else []) + [
        text(c.claim.claim), text(c.claim.article), text(c.ours),
        Value(c.verdict.value, flag=FLAGS.get(c.verdict, "")), text(c.evidence)]
    return Row(tuple(values), bad=c.verdict is Verdict.NOT_REPRODUCED, anchor=row_id)


def markdown(checked: list[Checked]) -> str:
    """The claims table as Markdown, a row per claim, each cell one line with its `|` and `<` escaped."""
    lines = ["| " + " | ".join(HEADERS) + " |", "|---" * len(HEADERS) + "|"]
    for c in checked:
        cells = (c.claim.claim, c.claim.article or "—", c.ours or "—", f"**{c.verdict.value}**",
                 c.evidence or "—")
        lines.append("| " + " | ".join(_md(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def _md(value: str) -> str:
    flat = "".join(ch if ch.isprintable() else " " for ch in value)
    return flat.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")
