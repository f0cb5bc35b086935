"""A worker's start-up (the process, the targets' modules, CUDA for compiled mode) is done by
:meth:`WorkerPool.warm` before a campaign's first round, so the first target's first slice does
not pay for it (a compiled run's first target once ran 1 case in its whole share)."""

import os

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine, schedule
from fuzzkern.target import loader

HERE = os.path.dirname(__file__)
SLOW = os.path.join(HERE, "targets", "slow_import.py")


def _imports(mark):
    return mark.read_text().split() if mark.exists() else []


def test_warm_imports_the_targets_in_the_worker_before_any_case(tmp_path):
    mark = tmp_path / "imports"
    (lt,) = loader.load(f"{SLOW}::doubled")  # this process's own import (if not done yet)
    before = _imports(mark)
    # (the worker's environment, not this process's: the fork server may be older)
    pool = WorkerPool(env={"FUZZKERN_TEST_IMPORT_MARK": str(mark)}, compile_ahead=0)
    try:
        pool.warm([lt.ref], {"modes": ("interpret",)}, timeout=120)
        assert pool.started == 1 and pool.restarts == 0
        worker_imports = [p for p in _imports(mark) if p not in before]
        assert len(worker_imports) == 1  # the worker imported the target file, no case ran
        result = engine.fuzz_target(lt, pool, engine.CampaignOptions(
            budget=60, modes=("interpret",), seed=0, max_examples=3, database=None), 60)
        assert result.cases == 3 and not result.failures
        # the cases ran in the warmed worker: no second import, no new worker
        assert [p for p in _imports(mark) if p not in before] == worker_imports
        assert pool.started == 1
    finally:
        pool.close()


def test_a_campaigns_first_target_is_not_charged_for_start_up():
    # An import of 8 s inside the first target's first case would be charged to its first
    # slice (8 s or more of its time, one case: a compiled run's first target once ran 1 case
    # in 18 s); warmed up, the import is done before the shares are cut, and the two targets
    # split what is left of the budget (each ends at its case count: 60 s is for a loaded
    # machine).
    targets = loader.load(SLOW)
    assert targets[0].target.id.endswith("doubled")
    opts = engine.CampaignOptions(budget=60.0, modes=("interpret",), seed=0, database=None,
                                  max_examples=10, grace_min=1.0, grace_fraction=0.0)
    pool = WorkerPool(env={"FUZZKERN_TEST_IMPORT_SECONDS": "8"}, compile_ahead=0)
    try:
        first, second = schedule.run_campaign(targets, opts, jobs=1, pool=pool)
    finally:
        pool.close()
    assert first.cases >= 1 and second.cases >= 1, (first.cases, second.cases)
    assert first.seconds < 8.0, first.seconds  # the 8 s import is not in it
