"""What a third party's adapter suite can run: the contract every adapter keeps, checked the
way toolbench checks its own (tests/contract/test_adapter_contract.py runs it over every
registered adapter).

    from toolbench.testing import check_adapter

    def test_my_adapter_keeps_the_contract(tmp_path):
        check_adapter(MyAdapter(), tmp_path)

May import: toolbench.errors, toolbench.record, toolbench.scenario, toolbench.contract,
toolbench.hosts"""
from __future__ import annotations

from toolbench.testing.contract import check_adapter, representative_cells

__all__ = ["check_adapter", "representative_cells"]
