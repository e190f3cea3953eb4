"""The built-in adapters, one per load tool, installed as toolbench.adapters and registered
through the `toolbench.adapters` entry points exactly as a third party's. A tool with several
output formats or a plan of its own is a package (jmeter/, locust/, gatling/), its entry point
`<tool>.adapter:ADAPTER`.

May import: toolbench.errors, toolbench.record, toolbench.scenario, toolbench.contract"""
