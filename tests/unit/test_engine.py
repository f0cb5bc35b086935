"""The engine and its workers: crashes, hangs and exceptions are outcomes; fuzzing goes on."""

import os

import pytest

from fuzzkern.errors import BudgetError
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.search.engine import parse_budget
from fuzzkern.target import loader

HERE = os.path.dirname(__file__)
MISBEHAVING = os.path.join(HERE, "targets", "misbehaving.py")


def _fuzz(name, budget=120.0, **kw):
    """A seeded run ended by its case count or its first failure (``max_failures=1``), not by
    the clock: the budget is only a generous cap for a loaded machine."""
    kw.setdefault("max_failures", 1)
    (lt,) = loader.load(f"{MISBEHAVING}::{name}")
    pool = WorkerPool()
    try:
        opts = engine.CampaignOptions(budget=budget, seed=0, **kw)
        return engine.fuzz_target(lt, pool, opts, budget), pool
    finally:
        pool.close()


@pytest.mark.parametrize(
    "text, seconds",
    [("90s", 90), ("10m", 600), ("1h", 3600), ("1h30m", 5400), ("45", 45), ("250ms", 0.25),
     ("1h2m3s", 3723)],
)
def test_parse_budget(text, seconds):
    assert parse_budget(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "10x", "-5s", "0s", "5 m s",
                                  "10m10m", "30s1m", "1h1h", "5s5", "1h30"])
def test_parse_budget_rejects(text):
    with pytest.raises(BudgetError):
        parse_budget(text)


def test_abort_is_a_crash_outcome_and_fuzzing_goes_on():
    result, pool = _fuzz("aborts")
    assert [f.outcome.verdict for f in result.failures] == ["crash"]
    failure = result.failures[0]
    assert failure.case.scalars["MODE"] == 1
    assert failure.case.dims == {"N": 1}
    assert "SIGABRT" in failure.outcome.message
    # the worker was replaced and later cases still ran (shrinking alone runs several)
    assert pool.restarts >= 1
    assert result.counts["pass"] >= 1


def test_hang_is_reported_within_the_timeout():
    result, _ = _fuzz("sleeps")
    assert [f.outcome.verdict for f in result.failures] == ["hang"]
    failure = result.failures[0]
    assert failure.case.scalars["MODE"] == 1
    assert failure.case.dims == {"N": 1}
    assert failure.outcome.seconds < 2.0 + 3.0  # the 2 s timeout, plus slack for the kill


def test_declared_precondition_is_counted_not_failed():
    result, _ = _fuzz("rejects", max_examples=40)
    assert result.failures == []
    assert result.counts["precondition"] >= 1
    assert result.counts["pass"] >= 1


def test_undeclared_exception_is_an_error_shrunk_to_the_boundary():
    result, _ = _fuzz("raises")
    assert [f.outcome.verdict for f in result.failures] == ["error"]
    failure = result.failures[0]
    assert failure.case.dims == {"N": 4}
    assert "only up to 3 elements" in failure.outcome.message


def test_hang_is_confirmed_by_a_rerun_before_it_is_reported():
    result, _ = _fuzz("sleeps")
    (failure,) = result.failures
    assert failure.outcome.verdict == "hang"
    assert "confirmed: a re-run with 4 s ran past it too" in failure.outcome.message
    assert result.slow == []


def test_a_slow_case_is_not_a_hang():
    result, _ = _fuzz("slow", max_examples=10)
    assert result.failures == []  # nothing reported, nothing to save
    assert len(result.slow) == 1 and "slow, not hung" in result.slow[0]
    assert "finished in 3." in result.slow[0]


SLOW_TARGETS = os.path.join(HERE, "targets", "slow_targets.py")


def _run_one(name, case_index=0, **limits):
    """One case of a slow_targets target, drawn by Hypothesis, run in a real worker."""
    from hypothesis import find

    (lt,) = loader.load(f"{SLOW_TARGETS}::{name}")
    case = find(lt.target.cases(), lambda c: True)
    pool = WorkerPool()
    try:
        with pool.limits(**limits):
            return pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]},
                            lt.target.timeout), case
    finally:
        pool.close()


def test_many_interpreted_programs_are_slow_not_hang_and_stopped_early():
    """6000 programs of a few ms each under a 2 s timeout: the first programs' cost says the
    launch would take past twice the timeout, so the case stops at once as slow."""
    import time

    t0 = time.monotonic()
    outcome, case = _run_one("many_programs")
    assert case.dims["N"] == 6000
    assert outcome.verdict == "slow" and not outcome.failed
    assert "of 6000 programs" in outcome.message and "slow, not hung" in outcome.message
    assert outcome.seconds < 2.0  # stopped before the timeout
    assert time.monotonic() - t0 < 30


def test_a_stuck_interpreted_program_is_a_hang():
    outcome, _ = _run_one("stalls")
    assert outcome.verdict == "hang"
    assert "its current program has run" in outcome.message
    assert outcome.modes["worker"].detail["progress"]["done"] in (1, 2)  # reports: <= 4/s
    assert outcome.seconds < 2.0 + 3.0


def test_compiling_past_the_timeout_is_not_a_hang():
    """A 3 s compilation under a 1 s timeout: the case passes, with its compile time."""
    outcome, _ = _run_one("compiles_long")
    assert outcome.verdict == "pass", outcome.message
    assert outcome.seconds > 3.0


def test_compiling_past_the_compile_limit_is_slow():
    outcome, _ = _run_one("compiles_long", compile_timeout=1.5)
    assert outcome.verdict == "slow"
    assert "compile limit of 1.5 s" in outcome.message
    detail = outcome.modes["worker"].detail
    assert detail["compile_timeout"] == 1.5 and 1.5 < detail["compile_seconds"] < 3.0


def test_slow_and_compile_time_are_counted_in_the_target_result():
    (lt,) = loader.load(f"{SLOW_TARGETS}::compiles_long")
    pool = WorkerPool()
    try:
        opts = engine.CampaignOptions(budget=20.0, seed=0, max_examples=2, compile_timeout=2.0)
        result = engine.fuzz_target(lt, pool, opts, 20.0)
    finally:
        pool.close()
    assert result.failures == []
    assert result.counts["slow"] == 2 and result.slow_compiles == 2
    assert 4.0 <= result.compile_seconds < 6.0
    assert all("compile limit of 2 s" in note for note in result.slow)


def test_the_stop_time_cuts_a_case_short():
    import time

    from fuzzkern.execution.pool import StopTime

    (lt,) = loader.load(f"{SLOW_TARGETS}::long_and_wrong")
    from hypothesis import find

    case = find(lt.target.cases(), lambda c: True)
    pool = WorkerPool()
    try:
        pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]}, 300)  # warm worker
        t0 = time.monotonic()
        with pool.limits(stop_at=t0 + 1.0), pytest.raises(StopTime):
            pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]}, 300)
        assert time.monotonic() - t0 < 2.5
        assert pool.restarts == 1  # the worker running the case was killed
        assert pool.stop_at is None  # the limit was for the block only
    finally:
        pool.close()


def test_draw_cases_gives_the_same_cases_every_time():
    (lt,) = [t for t in loader.load_all([]) if t.ref.endswith(":vector_add")]
    first = [c.to_json() for c in engine.draw_cases(lt.target, 6)]
    assert len(first) == 6 and len({str(c) for c in first}) > 1
    assert [c.to_json() for c in engine.draw_cases(lt.target, 6)] == first
