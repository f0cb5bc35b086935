"""A loaded machine does not make a correct kernel's case ``slow``: a case's own cost is its
worker's CPU time (fuzzkern.execution.pool.CaseClock), not the clock's.

Two busy loops (``python -c 'while 1: pass'``) share one core with the worker, which is pinned
there at nice 5: a machine loaded past doubt (the worker gets about a seventh of a core), while
the other core stays free for the rest of the machine. A correct kernel whose cases take past
their timeout and cost cap by the clock is not slow; a kernel whose own cost is past them still
is; a stuck program is still a hang. Each test also checks that the load did bite (the case
took past its timeout by the clock), else it would show nothing. Real interpreter, real
workers, real Hypothesis; sizes are chosen from the worker's measured CPU cost per program, so
the tests count programs, not seconds."""

import os
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest

from fuzzkern.case.model import Case, Layout, TensorCase
from fuzzkern.execution.pool import LOADED_SHARE, WorkerPool
from fuzzkern.judge.outcome import Verdict
from fuzzkern.search import engine
from fuzzkern.target import loader

HERE = os.path.dirname(__file__)
MANY = os.path.join(HERE, "..", "fixtures", "many_programs.py")
SLOW_TARGETS = os.path.join(HERE, "targets", "slow_targets.py")
OPTIONS = {"modes": ["interpret"]}
#: the timeout of the correct cases, and their own cost at most (worker CPU seconds)
TIMEOUT = 1.0
OWN_COST = 0.4

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or not os.path.exists("/proc/self/stat"),
    reason="pins processes to a core and reads /proc (Linux)")


def _case(n):
    return Case({"N": n}, {"x": TensorCase.build((n,), "float32", Layout.contiguous(1))})


@contextmanager
def _loaded(pool):
    """Two busy loops on core 0, and the pool's worker with them, at nice 5."""
    worker = pool._get()
    os.sched_setaffinity(worker.process.pid, {0})
    os.setpriority(os.PRIO_PROCESS, worker.process.pid, 5)
    loops = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
    try:
        for p in loops:
            os.sched_setaffinity(p.pid, {0})
        time.sleep(0.2)
        yield
    finally:
        for p in loops:
            p.kill()
            p.wait()


@pytest.fixture(scope="module")
def calibrated():
    """A warm worker and the CPU seconds one program of many_programs costs in it (with the
    case's fixed costs spread over the programs: an upper bound)."""
    (lt,) = loader.load(MANY)
    pool = WorkerPool()
    try:
        pool.run(lt.ref, _case(64).to_json(), OPTIONS, 300)  # imports, first launch
        meter = pool._get().cpu
        before = meter()[0]
        n = 2000
        assert pool.run(lt.ref, _case(n).to_json(), OPTIONS, 300).verdict == Verdict.PASS
        yield lt, pool, (meter()[0] - before) / n
    finally:
        pool.close()


def test_a_correct_case_past_its_timeout_by_the_clock_only_is_not_slow(calibrated):
    lt, pool, each = calibrated
    n = int(OWN_COST / each)
    with _loaded(pool):
        t0 = time.monotonic()
        outcome = pool.run(lt.ref, _case(n).to_json(), OPTIONS, TIMEOUT, cost_cap=TIMEOUT)
        took = time.monotonic() - t0
    assert outcome.verdict == Verdict.PASS, outcome.message
    assert took > TIMEOUT, took  # the load bit: by the clock, past the timeout and the cap


def test_a_case_whose_own_cost_is_past_the_timeout_is_still_slow(calibrated):
    lt, pool, each = calibrated
    n = int(8 / each)  # about 8 s of the worker's own CPU under a 1 s timeout
    with _loaded(pool):
        t0 = time.monotonic()
        outcome = pool.run(lt.ref, _case(n).to_json(), OPTIONS, TIMEOUT)
        took = time.monotonic() - t0
    assert outcome.verdict == Verdict.SLOW, outcome.message
    assert "2 times the timeout of 1 s" in outcome.message and "slow, not hung" in outcome.message
    # both clocks where the programs measured were slowed by the load (the first two
    # programs, 0.4 ms in all, can run within one time slice of the worker's: one clock then)
    progress = outcome.modes["worker"].detail["progress"]  # (rounded to the millisecond)
    margin = progress["cpu"] - LOADED_SHARE * progress["seconds"]
    if abs(margin) > 0.002:
        assert ("machine is loaded" in outcome.message) == (margin < 0), (progress,
                                                                         outcome.message)
    assert took < 8  # stopped early, from its first programs' cost
    # and one past the cost cap (but within twice the timeout) is stopped for the budget
    outcome = pool.run(lt.ref, _case(int(3 / each)).to_json(), OPTIONS, 60, cost_cap=TIMEOUT)
    assert outcome.verdict == Verdict.SLOW and "too expensive for the budget" in outcome.message


def test_a_stuck_program_is_still_a_hang_on_a_loaded_machine(calibrated):
    from hypothesis import find

    (stalls,) = loader.load(f"{SLOW_TARGETS}::stalls")
    case = find(stalls.target.cases(), lambda c: True)
    _, pool, _ = calibrated
    with _loaded(pool):
        t0 = time.monotonic()
        outcome = pool.run(stalls.ref, case.to_json(), OPTIONS, stalls.target.timeout)
        took = time.monotonic() - t0
    assert outcome.verdict == Verdict.HANG and "its current program has run" in outcome.message
    assert took < 3 * stalls.target.timeout + 5


TARGET = '''
import sys

sys.path.insert(0, {fixtures!r})

import fuzzkern  # noqa: E402
from fuzzkern import strategies as fks  # noqa: E402
from many_programs import copy_one_per_program  # noqa: E402

bounded = fuzzkern.Target(
    launcher=copy_one_per_program, reference=lambda x: x.clone(),
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False)),
    dims={{"N": fks.sizes(min_value={lo}, max_value={hi})}},
    timeout={timeout},
)
'''


def test_fuzzing_a_correct_kernel_on_a_loaded_machine_reports_no_slow_case(calibrated, tmp_path):
    """The brief's check: a campaign of a correct kernel while the machine is loaded."""
    _, pool, each = calibrated
    hi = int(OWN_COST / each)
    path = tmp_path / "bounded_targets.py"
    path.write_text(TARGET.format(fixtures=os.path.dirname(os.path.abspath(MANY)), lo=hi // 2,
                                  hi=hi, timeout=TIMEOUT))
    (lt,) = loader.load(str(path))
    with _loaded(pool):
        opts = engine.CampaignOptions(budget=60.0, seed=3, max_examples=4)
        t0 = time.monotonic()
        result = engine.fuzz_target(lt, pool, opts, 60.0)
        took = time.monotonic() - t0
    assert result.failures == [] and result.error is None
    assert result.counts[Verdict.SLOW] == 0 and result.slow == [], result.slow
    assert result.counts[Verdict.PASS] >= 4
    assert took / result.cases > TIMEOUT, (took, result.cases)  # the load bit
