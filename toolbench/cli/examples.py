"""The examples each command's --help ends with: one place, so that they stay in step with the README."""
from __future__ import annotations

TOP = """examples:
  toolbench validate scenarios/quickstart.yaml
  toolbench run scenarios/quickstart.yaml
  toolbench export reports -o results.csv
  toolbench publish reports --site site

`toolbench COMMAND --help` shows each command's options and examples."""

EXAMPLES = {
    "run": """examples:
  toolbench run scenarios/quickstart.yaml
  toolbench run scenarios/quickstart.yaml --profile quick --reports-dir /tmp/runs
  toolbench run scenarios/quickstart.yaml --resume reports/quickstart-20261130T011015Z
  toolbench run scenarios/quickstart.yaml --retry-disturbed 2   # cells other work disturbed, run again
  toolbench run scenarios/quickstart.yaml --quiet     # prints only the report's path
  toolbench run scenarios/quickstart.yaml --json | jq '.cells[] | select(.status != "ok")'""",
    "validate": """examples:
  toolbench validate scenarios/quickstart.yaml
  toolbench validate scenarios/quickstart.yaml --profile quick
  toolbench validate my.yaml --json       # the plan or every error, as JSON""",
    "parse": """examples:
  toolbench parse --tool ab out.txt out.csv out.tsv     # files sharing a name are one run
  toolbench parse --tool siege run1.txt --format csv
  toolbench parse --tool jmeter results.jtl --format table""",
    "tools": """examples:
  toolbench tools
  toolbench tools --json
  toolbench tools --quiet    # the names of the tools found, one a line""",
    "report": """examples:
  toolbench report reports/quickstart-20261130T011015Z     # writes RUN_DIR/report.html
  toolbench report RUN_A RUN_B -o compare.html             # two runs side by side
  toolbench report RUN_DIR --claims-from scenarios/studies/001-tool-comparison.yaml   # a study's claims first""",
    "claims": """examples:
  toolbench claims RUN_DIR                                 # the claims stored with the run, as Markdown
  toolbench claims RUN_DIR --claims-from scenarios/studies/001-tool-comparison.yaml   # a run made before claims
  toolbench claims RUN_DIR --claims-from studies/003-socket-servers   # a bundled scenario, by name""",
    "check": """examples:
  toolbench check reports/quickstart-20261130T011015Z     # the scenario's own criteria, again
  toolbench check RUN_DIR --criteria 'p99_ms < 50' --criteria 'error_rate < 1%' --junit criteria.xml
  toolbench check RUN_DIR --criteria 'engine.rps >= 0.95 * ab.rps' --fail-on criteria""",
    "publish": """examples:
  toolbench publish reports --site site                   # reports and results only, redacted
  toolbench publish reports --site site --with-raw        # the tools' raw output too
  toolbench publish reports --site site --compare RUN_A RUN_B
  toolbench publish reports --site site --no-redact       # keep paths and host names
  toolbench publish reports --site site --redact-private-addresses   # and take out 10.x, 192.168.x, ...""",
}
