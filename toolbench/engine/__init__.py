"""toolbench's own load generator: HTTP/1.1 on asyncio + uvloop with a C parser
(httptools), several worker processes, closed and open models, every request
timed into HDR histograms, results in the common schema.

Entry points: `toolbench engine ...` (command.py), `python -m toolbench.engine ...`,
and the `engine` adapter (toolbench.adapters.engine).

May import: toolbench.errors, toolbench.record"""
