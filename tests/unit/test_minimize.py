"""The post-shrink minimizer (fuzzkern.search.minimize) on planted kernels, through real workers.

Each starting case is one Hypothesis leaves behind on bench/planted/: its value recipe or its
tile count ties it to a size that Hypothesis cannot lower one choice at a time.
"""

import os
import time

import pytest

from fuzzkern.case.model import Case, TensorCase, Values
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.judge.outcome import Outcome, Verdict
from fuzzkern.judge.verdict import verdict_family
from fuzzkern.report import text as reporting
from fuzzkern.search import engine, minimize
from fuzzkern.target import loader

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
PLANTED = os.path.join(ROOT, "bench", "planted")
TARGETS = os.path.join(HERE, "targets", "minimize_targets.py")
OPTIONS = {"modes": ["interpret"], "debug": False}


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool()
    yield p
    p.close()


def _planted(name):
    (lt,) = [t for t in loader.load(os.path.join(PLANTED, f"{name}.py"))
             if t.ref.endswith("::target")]
    return lt


class Runner:
    """Runs cases of one target through the pool and counts them."""

    def __init__(self, lt, pool):
        self.lt, self.pool, self.runs = lt, pool, 0

    def __call__(self, case):
        self.runs += 1
        return self.pool.run(self.lt.ref, case.to_json(), OPTIONS, 60)


def _tensor(shape, values=None):
    return TensorCase.build(shape, "float32", None, values or Values())


def test_failure_in_row_one_is_minimized_to_one_row(pool):
    lt = _planted("bug_rowmax_zero_init")
    run = Runner(lt, pool)
    # seed 0 small ints: row 0 holds 4, row 1 holds -4 (all negative: the kernel says 0)
    case = Case({"M": 2, "N": 1}, {"x": _tensor((2, 1))})
    outcome = run(case)
    assert outcome.verdict == Verdict.KERNEL_BUG
    # why Hypothesis stops here: one row with the same recipe is row 0 alone, which passes
    one_row = Case({"M": 1, "N": 1}, {"x": _tensor((1, 1))})
    assert run(one_row).verdict == Verdict.PASS

    m = minimize.minimize(lt.target, case, outcome, run)
    assert dict(m.case.dims) == {"M": 1, "N": 1}, m.case.describe()
    assert m.case.tensors["x"].shape == (1, 1)
    assert m.case.tensors["x"].dtype == "float32" and m.case.tensors["x"].is_contiguous
    assert m.steps >= 1 and m.outcome.verdict == Verdict.KERNEL_BUG
    # the accepted case fails again, the same way, when run on its own
    again = run(m.case)
    assert again.verdict == Verdict.KERNEL_BUG
    assert again.message == m.outcome.message


def test_remainder_tile_trades_rows_for_columns(pool):
    lt = _planted("bug_persistent_chunks")
    run = Runner(lt, pool)
    # 2x2 tiles of 16x16 on 3 programs: tile 3 is never written
    case = Case({"M": 17, "N": 17}, {"x": _tensor((17, 17)), "residual": _tensor((17, 17)),
                                     "NUM_SMS": 3})
    outcome = run(case)
    assert outcome.verdict == Verdict.UNWRITTEN_OUTPUT

    m = minimize.minimize(lt.target, case, outcome, run)
    # SPEC's minimal case: 3 tiles in one row on 2 programs
    assert dict(m.case.dims) == {"M": 1, "N": 33}, m.case.describe()
    assert m.case.scalars == {"NUM_SMS": 2}
    for t in m.case.tensors.values():
        assert t.shape == (1, 33) and t.values == Values()
    assert verdict_family(run(m.case).verdict) == Verdict.KERNEL_BUG
    assert m.runs <= minimize.MAX_RUNS


def test_softmax_overflow_needs_another_special_value_at_one_element(pool):
    lt = _planted("bug_softmax_overflow")
    run = Runner(lt, pool)
    # inf at element 0 of 2: torch gives NaN, the kernel 0 at element 1. With one element
    # both give NaN, so N=1 needs a value that overflows exp without being inf.
    case = Case({"M": 1, "N": 2}, {"x": _tensor((1, 2), Values(0, "small_ints",
                                                                ((0, "inf"),)))})
    outcome = run(case)
    assert outcome.verdict == Verdict.KERNEL_BUG

    m = minimize.minimize(lt.target, case, outcome, run)
    assert dict(m.case.dims) == {"M": 1, "N": 1}, m.case.describe()
    assert run(m.case).verdict == Verdict.KERNEL_BUG


def test_the_run_cap_is_a_hard_limit(pool):
    lt = _planted("bug_persistent_chunks")
    run = Runner(lt, pool)
    case = Case({"M": 17, "N": 17}, {"x": _tensor((17, 17)), "residual": _tensor((17, 17)),
                                     "NUM_SMS": 3})
    outcome = run(case)
    run.runs = 0

    m = minimize.minimize(lt.target, case, outcome, run, max_runs=10)
    assert run.runs == m.runs == 10
    assert m.stopped == "runs"
    # what it reached within the cap is smaller, and still fails
    assert sum(t.numel for t in m.case.tensors.values()) < 2 * 17 * 17
    assert verdict_family(m.outcome.verdict) == Verdict.KERNEL_BUG


def test_a_passed_deadline_runs_nothing(pool):
    lt = _planted("bug_rowmax_zero_init")
    run = Runner(lt, pool)
    case = Case({"M": 2, "N": 1}, {"x": _tensor((2, 1))})
    outcome = run(case)
    run.runs = 0

    m = minimize.minimize(lt.target, case, outcome, run, deadline=time.monotonic() - 1)
    assert (m.case, m.outcome, m.runs, run.runs, m.stopped) == (case, outcome, 0, 0, "deadline")


@pytest.mark.parametrize("name, rejected", [("two_rows", Verdict.PRECONDITION),
                                            ("errors_on_one_row", Verdict.ERROR)])
def test_a_precondition_or_another_verdict_family_is_rejected(pool, name, rejected):
    (lt,) = loader.load(f"{TARGETS}::{name}")
    seen = []

    def run(case):
        outcome = pool.run(lt.ref, case.to_json(), OPTIONS, 60)
        seen.append((dict(case.dims), outcome.verdict))
        return outcome

    case = Case({"M": 2, "N": 1}, {"x": _tensor((2, 1))})
    outcome = run(case)
    assert outcome.verdict == Verdict.KERNEL_BUG

    m = minimize.minimize(lt.target, case, outcome, run)
    # every one-row candidate got `rejected`, so the two rows stay
    assert ({"M": 1, "N": 1}, rejected) in seen
    assert dict(m.case.dims) == {"M": 2, "N": 1}
    assert m.outcome.verdict == Verdict.KERNEL_BUG


def test_hangs_and_passes_are_left_alone():
    def run(case):
        raise AssertionError("nothing may run")

    lt = _planted("bug_rowmax_zero_init")
    case = Case({"M": 2, "N": 1}, {"x": _tensor((2, 1))})
    for verdict in (Verdict.HANG, Verdict.PASS):
        m = minimize.minimize(lt.target, case, Outcome(verdict), run)
        assert (m.case, m.runs) == (case, 0)


def test_the_engine_reports_and_saves_the_minimized_case(tmp_path):
    lt = _planted("bug_rowmax_zero_init")
    pool = WorkerPool()
    try:
        # ended by its first failure, not the clock (the budget is a cap for a loaded machine)
        opts = engine.CampaignOptions(budget=120.0, seed=0, database=None, explain=False,
                                      corpus=str(tmp_path), max_failures=1)
        result = engine.fuzz_target(lt, pool, opts, 120.0)
    finally:
        pool.close()
    (failure,) = result.failures
    assert dict(failure.case.dims) == {"M": 1, "N": 1}, failure.case.describe()
    assert failure.outcome.verdict == Verdict.KERNEL_BUG
    # the corpus entry and the failure text describe that case, with its outcome
    from fuzzkern.corpus import store as corpus

    entry = corpus.load(failure.corpus_path)
    assert entry.case == failure.case
    assert entry.outcome.message == failure.outcome.message
    text = reporting.failure_text(failure, lt.ref)
    assert f"minimal case: {failure.case.describe()}" in text
    assert "dims: M=1, N=1" in text
