"""A RunResult with every field set, for round trips and reports."""
from __future__ import annotations

from toolbench.record import histogram
from toolbench.record.schema import (Counts, Failures, Fidelity, GeneratorCost, Identity, Latency, Measurement, Outcome,
                                     Percentiles, ProbeSummary, RunResult, SecondSample, Status)


def full_result() -> RunResult:
    return RunResult(
        identity=Identity(scenario="s", cell_id="ab-c10-ka-rep1", tool="ab", tool_version="2.3", concurrency=10,
                          keepalive=True, params={"size": "1k"}),
        outcome=Outcome(Status.OK, exit_code=0),
        measurement=Measurement(
            tool="ab",
            counts=Counts(requests_total=10, requests_ok=9, requests_failed=1, failures=Failures(http_4xx=1),
                          status_codes={200: 9, 404: 1}),
            latency=Latency(mean_ms=1.5, percentiles=Percentiles(p99_ms=3.0), resolution_ms=1.0),
            histogram=histogram.encode(histogram.from_ms([1.0, 2.0, 3.0])),
            histogram_resolution_ms=1.0,
            series=[SecondSample(second=0, requests=10, errors=1)],
            fidelity={"latency.mean_ms": Fidelity.REPORTED, "counts.requests_failed": Fidelity.DERIVED},
            notes=["the tool's own note"]),
        notes=["toolbench's note"],
        cost=GeneratorCost(cpu_user_s=0.5),
        probe=ProbeSummary(samples_ms=[0.4]),
    )
