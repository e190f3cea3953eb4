"""Servers as a dimension: the catalogue of bundled server stacks (nginx-static, the Flask
app of study 000 under flask-dev, gunicorn, uWSGI and nginx in front of uWSGI, the socket
servers of study 003), their typed specs, starting and stopping them, and what they spend.

    from toolbench.scenario.targets import parse_target
    from toolbench.servers.stacks import start
    from toolbench.servers.cost import ServerMonitor, summarize

    spec = parse_target(node, name)                  # one entry of `targets:`
    with start(spec, workdir, max_concurrency) as target:
        monitor = ServerMonitor(target.pids, target.port, interval_s)
        monitor.start(); ...load...; report = monitor.stop()
        cost = summarize(report, requests_total)     # a schema.ServerCost

This file imports nothing: the servers themselves import `toolbench.servers.apps`, and must
not carry the catalogue (psutil, yaml, ...) in the memory the monitor measures.

May import: toolbench.errors, toolbench.record, toolbench.scenario, toolbench.contract,
toolbench.hosts
"""
