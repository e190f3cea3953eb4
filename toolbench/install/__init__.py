"""Installing what toolbench drives, here and on remote hosts.

recipes: every recipe, the load tools' from their adapters (Adapter.install) and the targets'
and helpers' here; tools: `toolbench install`, the recipes carried out into the tools folder;
needs, setup_steps, setup: `toolbench setup`, each remote host of a scenario given what it needs
over SSH (needs: what a host needs, from the scenario; setup_steps: each need checked and met
there; setup: the whole setup of a host, and of every host of a scenario).

May import: toolbench.errors, toolbench.record, toolbench.scenario, toolbench.contract,
toolbench.hosts, toolbench.servers, toolbench.run"""
