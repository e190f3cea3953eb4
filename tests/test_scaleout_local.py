"""Two generators on this machine (`address: local`), against the nginx fixture: the path of
toolbench.scaleout that needs no SSH and no root."""
from __future__ import annotations

import pytest

from toolbench import histogram, runner, scenario, store
from toolbench.schema import Status

pytestmark = pytest.mark.integration


def test_two_local_generators_split_the_cell_and_their_merge_adds_up(tmp_path, nginx):
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
name: two-local
target: {{url: "{nginx.base_url}"}}
hosts:
  generators:
    - {{address: local, name: one}}
    - {{address: local, name: two, weight: 3}}
matrix: {{tool: [engine], concurrency: [4], keepalive: [true]}}
stop: {{requests: 800}}
probe: {{enabled: false}}
""")
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    (result,) = store.RunDir.open(summary.run_dir).results()
    assert result.outcome.status is Status.OK, result.outcome.error
    one, two = result.generators
    assert (one.name, one.concurrency, one.requests, one.clock) == ("one", 1, 200, None)
    assert (two.name, two.concurrency, two.requests) == ("two", 3, 600)
    assert [p.measurement.counts.requests_total for p in (one, two)] == [200, 600]
    assert result.measurement.counts.requests_total == 800 == result.measurement.counts.requests_ok
    assert result.measurement.histogram == histogram.encode(
        histogram.merge([one.measurement.histogram, two.measurement.histogram]))
    assert (summary.run_dir / one.path / "stdout.txt").exists() and one.path.endswith("gen-one")
    assert one.cost is not None and one.cost.cpu_user_s is not None
