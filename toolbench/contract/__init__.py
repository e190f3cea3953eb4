"""The adapter contract: everything an adapter (adapters/, or a third party's) may use, and all
the core knows of one.

adapter: the Adapter base class (detect, supports, build, parse, its declared options, exit
codes and `threads`) and what they exchange (Found/Missing, Invocation, RawOutput); cell: the
Cell an adapter builds a command for; host: the Host interface a tool is detected and run
through; registry: adapters found through the `toolbench.adapters` entry points; checked: the
one way a tool's output is read (parse, derive, invariants); distributed: what a tool's own
distributed mode is handed (generators, launching a part, finishing it); cores: how many
cores a tool can use; recipe: the steps that install a tool (apt, go install, a script beside
its adapter, the venv), which each adapter declares; ramp: how long a tool takes to reach its rate; runs_found: which files
of a `toolbench parse` call are one run; toolsdir: where toolbench's installs of tools live.

May import: toolbench.errors, toolbench.record, toolbench.scenario"""
