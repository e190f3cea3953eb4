"""How many of the generator's cores a tool can use, from how it is built (each adapter's
`threads`), and the share of them that counts as "the generator was the limit"."""
from __future__ import annotations

from toolbench.contract import registry
from toolbench.contract.adapter import Threads

# The share of the capacity that counts as "used what it can". The tool's share is its CPU over
# the wall time of its process, start and end included (Locust spends about a second of a
# 5 s cell importing and stopping), and the server and the monitor share the host: a tool
# flat out during its load reads as 80 to 90 %.
GENERATOR_BOUND_SHARE = 0.80


def threads_of(tool: str) -> Threads:
    """A tool toolbench has no adapter for is taken as able to use every core, so it is
    called generator-bound only when it used them all."""
    adapter = registry.adapters().get(tool)
    return adapter.threads if adapter is not None else Threads.ALL


def usable_cores(tool: str, processes: int | None, host_cores: int | None) -> float | None:
    """How many cores the tool's design lets it use on this host."""
    model = threads_of(tool)
    if model is Threads.ONE:
        return 1.0
    if model is Threads.PER_PROCESS:
        count = float(processes or 1)
        return min(count, float(host_cores)) if host_cores else count
    return float(host_cores) if host_cores else None
