"""How fast, and in how much memory, toolbench normalizes a large JMeter JTL.

Writes a JMeter 5.x CSV JTL of --rows samples (default 10 million, about 1 GB) into a
temporary folder, then parses it --runs times, each time in a fresh process that runs
exactly what `toolbench parse --tool jmeter` and the runner run (the adapter's parse
and derive.complete), and prints rows/s (wall clock and CPU) and the peak RSS of that
process. The file is deleted at the end.

    .venv/bin/python bench/bench_jtl.py [--rows 10000000] [--runs 3] [--dir /tmp]

The rows look like a real run's: 50 threads against one URL, about 40,000 samples a
second, elapsed times of 0-200 ms, one sample in 1,000 a 404, and now and then a failed
assertion whose message has a comma (JMeter quotes it) or a refused connection."""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = ("timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,"
          "bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect\n")
BYTES_PER_ROW = 100  # a little above what the rows below take
URL = "http://127.0.0.1:18090/"
CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from toolbench.contract.adapter import RawOutput
from toolbench.adapters.jmeter import adapter as jmeter
from toolbench.record.derive import complete
def cpu_s():  # this process and the worker processes it waited for
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))
wall, cpu = time.perf_counter(), cpu_s()
m = complete(jmeter.parse(RawOutput(files={"jtl": Path(sys.argv[1])}, source=sys.argv[1])))
wall, cpu = time.perf_counter() - wall, cpu_s() - cpu
# Peaks of this process and of its largest worker: with one worker (2 CPUs) their sum bounds
# what was resident at once; with more workers each would add up to that worker's peak.
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rows": m.counts.requests_total, "ok": m.counts.requests_ok, "wall_s": wall, "cpu_s": cpu,
                  "peak_rss_kib": peak_kib, "p99_ms": m.latency.percentiles.p99_ms}))
"""


def row(rnd: random.Random, i: int, ts: int) -> str:
    thread = f"tg 1-{i % 50 + 1}"
    elapsed = min(int(rnd.expovariate(1 / 12)), 200)
    if i % 100_000 == 99_999:
        return (f'{ts},{elapsed},GET /,200,OK,{thread},text,false,"The operation lasted too long: It took {elapsed} '
                f'milliseconds, but should not have lasted longer than 1 milliseconds.",248,118,50,50,{URL},'
                f'{elapsed},0,0\n')
    if i % 250_000 == 124_999:
        return (f"{ts},{elapsed},GET /,Non HTTP response code: org.apache.http.conn.HttpHostConnectException,"
                f"Non HTTP response message: Connect to 127.0.0.1:18090 [/127.0.0.1] failed: Connection refused,"
                f"{thread},text,false,,2587,0,50,50,{URL},0,0,{elapsed}\n")
    if i % 1000 == 500:
        return f"{ts},{elapsed},GET /,404,Not Found,{thread},text,false,,308,118,50,50,{URL},{elapsed},0,0\n"
    latency = max(0, elapsed - rnd.randint(0, 1))
    return f"{ts},{elapsed},GET /,200,OK,{thread},text,true,,248,118,50,50,{URL},{latency},0,0\n"


def generate(path: Path, rows: int) -> None:
    rnd = random.Random(20261130)
    start = 1_796_001_494_862
    with open(path, "w") as fh:
        fh.write(HEADER)
        for first in range(0, rows, 100_000):
            fh.write("".join(row(rnd, i, start + i // 40) for i in range(first, min(rows, first + 100_000))))


def parse_once(path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the parse failed:\n{done.stderr}")
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    need = args.rows * BYTES_PER_ROW + (256 << 20)
    free = shutil.disk_usage(args.dir).free
    if free < need:
        print(f"bench_jtl: {args.dir} has {free >> 20} MiB free; {need >> 20} MiB are needed", file=sys.stderr)
        return 1
    folder = Path(tempfile.mkdtemp(prefix="bench-jtl-", dir=args.dir))
    path = folder / "results.jtl"
    try:
        began = time.perf_counter()
        generate(path, args.rows)
        size = path.stat().st_size
        print(f"generated {args.rows:,} rows, {size / 1e9:.2f} GB, in {time.perf_counter() - began:.1f} s: {path}")
        runs = []
        for n in range(1, args.runs + 1):
            result = parse_once(path)
            if result["rows"] != args.rows:
                raise SystemExit(f"parsed {result['rows']} rows of {args.rows}")
            runs.append(result)
            print(f"run {n}: {result['wall_s']:.2f} s wall, {args.rows / result['wall_s'] / 1e6:.2f} M rows/s; "
                  f"{result['cpu_s']:.2f} s CPU (all processes), {args.rows / result['cpu_s'] / 1e6:.2f} M rows/s per CPU second; "
                  f"peak RSS {result['peak_rss_kib'] / 1024:.0f} MiB; load {os.getloadavg()[0]:.2f}")
        wall = statistics.median(r["wall_s"] for r in runs)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        rss = statistics.median(r["peak_rss_kib"] for r in runs) / 1024
        print(f"median of {len(runs)}: {args.rows / wall / 1e6:.2f} M rows/s wall, "
              f"{args.rows / cpu / 1e6:.2f} M rows/s per CPU second, peak RSS {rss:.0f} MiB "
              f"({os.cpu_count()} CPUs, Python {sys.version.split()[0]})")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
