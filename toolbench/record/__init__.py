"""The record: what a run leaves on disk, and the one schema every tool's figures become.

schema and observed: the versioned RunResult (a tool's Measurement inside toolbench's own view:
identity, outcome, generator and server cost, probe); codec and migrate: strict JSON both ways
and the chain that brings older records up; manifest and store: the run folder (manifest.json,
results.jsonl, raw/); runfiles: every file of a run opened without following a link (a run
folder is untrusted input); outfile: a file the user names for output (`-o`, `--junit`),
only ever a regular file, replaced whole; yamltext: the stored scenario text read back bounded; numbers, histogram, timings, failures: how a parser reads numbers,
per-request times and error texts; invariants: what every Measurement must hold; derive,
diagnose, merge, stats: what toolbench computes from the records (derived figures, a cell's
status, parts merged, noise and peaks).

May import: toolbench.errors"""
