"""The report: a stored run, read from disk only, rendered to one self-contained HTML file
(model: the run as view models; one module per section; render and templates/: jinja2 and
inline SVG charts), two runs compared (compare), a folder of runs as a static site (site, site_files: only what
publish wrote there is replaced; redact: paths, hosts and secrets out, secrets: which a run has,
secret_text: how they are found in any encoding).

May import: toolbench.errors, toolbench.record, toolbench.scenario, toolbench.contract"""
