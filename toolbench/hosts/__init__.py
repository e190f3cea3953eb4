"""The machines: the Host interface (toolbench.contract.host) on this machine (local) and over
SSH (ssh, ssh_connect, ssh_process), and what toolbench learns from a host.

lifeline: nothing toolbench starts outlives it; clocks: a host's clock against this one's;
prereq: ulimits and sysctls found, wanted, applied; monitor and monitor_read: a process tree
and its host sampled while a tool or a server runs; placement, cpuset and placed: who runs on
which CPUs (a scenario's `placement:` resolved, the cgroup cpusets, applied to a run and read back);
netcounters: the kernel's TCP counters (listen overflows, SYN retransmits, resets, TIME_WAIT).

May import: toolbench.errors, toolbench.record, toolbench.scenario, toolbench.contract"""
