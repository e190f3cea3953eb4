"""`toolbench setup`: prepares the remote generator and target hosts of a scenario over SSH.

needs: what each host needs, from the scenario (pure); steps: each need checked on the host
and, when unmet, met there; record: what was changed and how to undo it; hosts: the whole
setup of one host, and of every host of a scenario."""
