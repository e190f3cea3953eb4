"""Stored runs out to other programs: rows (one flat row per result, and `toolbench.load()`),
formats (CSV, JSON, Markdown, Parquet, and each result's .hgrm), junit (a run as JUnit XML).

May import: toolbench.errors, toolbench.record, toolbench.scenario"""
