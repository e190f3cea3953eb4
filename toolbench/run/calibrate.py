"""The calibration: a short fixed reference timed before the first cell and after the last.

The reference is CPU-bound work of a fixed size (SHA-256 over 64 KiB, a few hundred times),
timed in several samples on toolbench's own CPUs (with the generator's under the default
placement). It does not measure HTTP; it measures the machine: a VM whose host got busier, a CPU
that throttled, a neighbour that arrived. When the two references differ by more than their own
spread, the report says the machine's speed drifted during the run (record.machine.Calibration).

Why not a loopback HTTP reference: it would need a target and a tool of its own, and would mix
the machine's drift with the server's state, which is what the cells measure."""
from __future__ import annotations

import hashlib
import statistics
import time

from toolbench.record import store
from toolbench.record.machine import Reference

_BLOCK = b"\x5a" * 65536
_HASHES = 500  # about 20 ms a sample on this project's machine
SAMPLES = 7


def _sample() -> float:
    """Megabytes hashed per second in one sample."""
    started = time.perf_counter()
    for _ in range(_HASHES):
        hashlib.sha256(_BLOCK).digest()
    return _HASHES * len(_BLOCK) / (time.perf_counter() - started) / 1e6


def reference(cpus: list[int] | None, samples: int = SAMPLES) -> Reference:
    """The reference, timed now in this process (on `cpus`, where the placement put toolbench)."""
    _sample()  # the first pays for the import and the caches
    values = [_sample() for _ in range(samples)]
    median = statistics.median(values)
    # Half the interquartile range: on a VM one sample in ten can be half as fast (the host's
    # own work); the range would make every drift look like noise.
    q1, _, q3 = statistics.quantiles(values, n=4)
    spread = (q3 - q1) / 2 / median * 100 if median else 0.0
    return Reference(at=store.utc_now(), hashed_mb_per_s=round(median, 3), spread_pct=round(spread, 2),
                     samples=samples, cpus=cpus)
