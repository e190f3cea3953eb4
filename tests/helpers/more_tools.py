"""The scenario the end-to-end runs of wrk, hey, h2load, httperf, bombardier, vegeta and oha share."""
from __future__ import annotations

SCENARIO = """\
name: more-tools-live
target: {server: nginx-static}
matrix:
  tool: [wrk, hey, h2load, httperf]
  concurrency: [2]
  keepalive: [true, false]
  rate: [null, 40]
stop: {duration: 1s}
"""
