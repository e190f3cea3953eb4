"""Running a scenario: the plan, the targets, and each cell.

plan: the matrix expanded into cells, each runnable or unsupported with the reason; runner: a
scenario from plan to the last result, each appended as it exists; serving: the targets started
in turn; cell: one cell on one generator (warm-up, run, parse, what was observed beside it);
execute and tool_steps: a tool's run on its host and the steps after it; warmup: the unmeasured
run before a cell; probe: requests timed by toolbench itself; generator_watch: the generator's
monitor, here or over SSH; detection: each tool looked for where it runs; quiet: what else the
machine running the tool did during a cell (foreign CPU, steal: a cell over the limits is
disturbed); retry: disturbed cells run again (`--retry-disturbed`); scaleout/: one cell on
several generators; programs: the programs a scenario itself would start (a target's command,
tool paths, a locustfile), listed by `validate` and refused by `run` without --allow-commands.

May import: toolbench.errors, toolbench.record, toolbench.scenario, toolbench.contract,
toolbench.hosts, toolbench.servers"""
