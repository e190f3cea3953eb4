"""One cell on several generators (`hosts.generators`): fleet, one instance of the tool per
generator started at one instant and their figures merged; own, a tool's own distributed mode
(Locust's master and workers, JMeter's controller and servers) made a result.

May import: what toolbench.run may import"""
