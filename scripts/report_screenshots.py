"""Screenshots of reports as a reader first sees them: headless Chromium, the window at 1400 px
and at 390 px (a phone) wide, nothing scrolled. Each report is rendered from stored runs first.

    .venv/bin/python scripts/report_screenshots.py OUT_DIR NAME=RUN_DIR[,RUN_DIR][@SCENARIO] ...

(@SCENARIO: the claims of that scenario, as `toolbench report --claims-from` shows them)
prints, per screenshot, whether the question, the headline and the answering figure's first
chart (a study's claims: their first row) lie wholly inside the window, the report's size and
how long the browser took to load it."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WINDOWS = ((1400, 900), (390, 844))
# Where the parts of the answer end, in CSS pixels from the top of the window.
BOTTOMS = """JSON.stringify(Object.fromEntries([
  ["question", ".answer .question"], ["headline", ".answer .headline"],
  ["figure", ".answer-figure .dots svg, .answer-figure table.scorecard, .answer-figure.claims tbody tr"]
  ].map(([k, sel]) => {
    const el = document.querySelector(sel); return [k, el ? el.getBoundingClientRect().bottom : null]; })))"""

# From the start of the navigation to the end of the load event: parsed, styled, scripts run.
LOADED = "performance.getEntriesByType('navigation')[0].loadEventEnd"


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(REPO / "tests"))
    import json

    from helpers import report_cdp
    from toolbench.cli import claims_cmd
    from toolbench.report import render

    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    chromium = report_cdp.find_chromium()
    if chromium is None:
        print("chromium is not installed (scripts/install.sh installs it)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp, report_cdp.Browser(chromium) as browser:
        for spec in argv[1:]:
            name, _, dirs = spec.partition("=")
            dirs, _, scenario = dirs.partition("@")
            claims = claims_cmd.given(Path(scenario)) if scenario else None
            html = render.render_runs([Path(d) for d in dirs.split(",")], Path(tmp) / f"{name}.html", claims)
            for width, height in WINDOWS:
                page = browser.open(html.as_uri(), width=width, height=height)
                shot = browser.screenshot(page, out / f"{name}-{width}.png", whole=False)
                bottoms = json.loads(browser.evaluate(page, BOTTOMS))
                seen = {k: v is not None and v <= height for k, v in bottoms.items()}
                loaded = browser.evaluate(page, LOADED)
                print(f"{shot}: " + ", ".join(f"{k} {'in view' if ok else 'below the window'}" for k, ok in seen.items())
                      + f"; {html.stat().st_size / 1024:.0f} KiB, loaded in {loaded:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
