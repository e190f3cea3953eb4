"""Gatling: the adapter (adapter) with its one fixed simulation (templates/), the simulation.log
it writes (log) and that log's layouts across Gatling's versions (layouts)."""
