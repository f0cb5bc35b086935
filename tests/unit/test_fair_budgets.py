"""Fair budgets: a target whose first case cannot finish within its share is cut short there
(not after its timeout or compile limit), says so, pays its overrun back from its own later
shares, and a run in which a target ran no case exits 2 unless ``--allow-idle-targets``."""

import os
import subprocess
import sys
import time

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine, schedule
from fuzzkern.search.engine import TargetResult
from fuzzkern.target import loader

HERE = os.path.dirname(__file__)
IDLE = os.path.join(HERE, "targets", "idle_targets.py")


def test_a_first_case_past_the_slice_share_is_cut_short_and_the_target_is_idle():
    (lt,) = loader.load(f"{IDLE}::compiles_forever")
    opts = engine.CampaignOptions(budget=4.0, seed=0, grace_min=1.0, grace_fraction=0.0,
                                  modes=("interpret",))
    pool = WorkerPool()
    try:
        # the worker started first (importing torch and Triton is no case's time, as in a run:
        # fuzzkern.search.schedule warms it before the budget's clock starts)
        pool.warm([lt.ref], {"modes": opts.modes, "assume_gpu": None})
        t0 = time.monotonic()
        result = engine.fuzz_target(lt, pool, opts, 4.0)
        took = time.monotonic() - t0
    finally:
        pool.close()
    # cut at share + grace (5 s), not at the 300 s compile limit or the 60 s compile
    assert took < 20.0, took
    assert result.cases == 0 and result.idle and not result.stopped
    assert result.cut is not None and result.cut.startswith("first case still compiling after")
    assert "0 kernels compiled" in result.cut
    assert "its share of the budget" in result.cut
    assert result.idle_reason() == result.cut


def _slot(name, debt=0.0):
    (lt,) = loader.load(f"{IDLE}::quick")
    slot = schedule._Slot(lt, TargetResult(name, lt.ref, slices=1))
    slot.debt = debt
    return slot


def test_an_overrun_is_paid_back_from_the_same_targets_later_shares():
    a, b, c = _slot("a", debt=5.0), _slot("b"), _slot("c", debt=30.0)
    plan = {s.total.target_id: share for s, share in schedule._plan([a, b, c], 30.0, 1)}
    assert plan == {"a": 5.0, "b": 10.0}  # c's debt covers its whole share: it sits out
    assert a.debt == 0.0 and c.debt == 20.0 and b.debt == 0.0


def _run(*extra):
    return subprocess.run([sys.executable, "-m", "fuzzkern", "run", IDLE, "--modes",
                           "interpret", "--budget", "16s", "--shrink-time", "0", "--no-db",
                           "--no-corpus", "-j", "1", "--seed", "0", *extra],
                          capture_output=True, text=True, timeout=120)


def test_a_run_where_a_target_ran_no_case_exits_2_unless_allowed():
    proc = _run()
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "compiles_forever ran no case: first case still compiling" in proc.stderr
    assert "--allow-idle-targets" in proc.stderr
    allowed = _run("--allow-idle-targets")
    assert allowed.returncode == 0, allowed.stdout[-2000:] + allowed.stderr[-2000:]
    assert "warning: " in allowed.stderr and "compiles_forever ran no case" in allowed.stderr


def test_a_first_case_longer_than_the_usual_overrun_finishes_and_the_target_runs():
    # 100 s for two targets: first shares of 12.5 s; a case still running is cut 12.5 s past
    # its share (the share, an eighth of the budget), 25 s in; but a target's first case may go
    # on to a quarter of the budget past it, 37.5 s in: the 30 s first compile finishes (cut,
    # it would start again in every slice and the target would never run a case), and the
    # later cases hit its cache.
    slow, = loader.load(f"{IDLE}::first_compile_slow")
    quick, = loader.load(f"{IDLE}::quick")
    opts = engine.CampaignOptions(budget=100.0, seed=0, modes=("interpret",), database=None,
                                  max_examples=20, grace_min=1.0, grace_fraction=0.0)
    first, second = schedule.run_campaign([slow, quick], opts, jobs=1)
    assert first.cut is None and first.cases >= 5, (first.cases, first.cut)
    assert second.cases >= 5


def _square(x):
    return x * x


def test_an_interrupted_parallel_run_ends_its_executor_before_returning(monkeypatch):
    """After a SIGTERM with -j 2, Python 3.11 once printed a traceback at exit ("Bad file
    descriptor" in concurrent.futures' exit hook) on a loaded machine: the executor's manager
    thread was still closing its wake-up pipe. `close()` meant to join it, but read the
    thread and the processes after `shutdown(wait=False)`, which drops them: it joined
    nothing. Now the processes and the manager thread are gone when `close()` returns."""
    from concurrent.futures import ProcessPoolExecutor

    from fuzzkern.execution.pool import _context

    parallel = object.__new__(schedule._Parallel)
    parallel.executor = ProcessPoolExecutor(max_workers=2, mp_context=_context())
    assert [f.result() for f in [parallel.executor.submit(_square, i) for i in (2, 3)]] == [4, 9]
    processes = parallel._processes()
    manager = parallel.executor._executor_manager_thread
    assert len(processes) == 2 and manager.is_alive()
    monkeypatch.setattr(engine._Interrupts, "signum", 15)
    parallel.close()
    assert not manager.is_alive()
    assert not any(p.is_alive() for p in processes)
