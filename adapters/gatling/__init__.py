"""Gatling: the adapter (adapter) with its one fixed simulation (templates/), and the
simulation.log it writes (log)."""
