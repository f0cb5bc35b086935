"""The engine and its workers: crashes, hangs and exceptions are outcomes; fuzzing goes on."""

import os

import pytest

from fuzzkern import engine, loader
from fuzzkern.engine import parse_budget
from fuzzkern.errors import BudgetError
from fuzzkern.worker import WorkerPool

HERE = os.path.dirname(__file__)
MISBEHAVING = os.path.join(HERE, "targets", "misbehaving.py")


def _fuzz(name, budget=30.0, **kw):
    (lt,) = loader.load(f"{MISBEHAVING}::{name}")
    pool = WorkerPool()
    try:
        opts = engine.CampaignOptions(budget=budget, seed=0, **kw)
        return engine.fuzz_target(lt, pool, opts, budget), pool
    finally:
        pool.close()


@pytest.mark.parametrize(
    "text, seconds",
    [("90s", 90), ("10m", 600), ("1h", 3600), ("1h30m", 5400), ("45", 45), ("250ms", 0.25)],
)
def test_parse_budget(text, seconds):
    assert parse_budget(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "10x", "-5s", "0s", "5 m s"])
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
    result, _ = _fuzz("sleeps", budget=40.0)
    assert [f.outcome.verdict for f in result.failures] == ["hang"]
    failure = result.failures[0]
    assert failure.case.scalars["MODE"] == 1
    assert failure.case.dims == {"N": 1}
    assert failure.outcome.seconds < 2.0 + 3.0  # the 2 s timeout, plus slack for the kill


def test_declared_precondition_is_counted_not_failed():
    result, _ = _fuzz("rejects", budget=8.0, max_examples=60)
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
    result, _ = _fuzz("sleeps", budget=40.0)
    (failure,) = result.failures
    assert failure.outcome.verdict == "hang"
    assert "confirmed: a re-run with 4 s ran past it too" in failure.outcome.message
    assert result.slow == []


def test_a_slow_case_is_not_a_hang():
    result, _ = _fuzz("slow", budget=30.0)
    assert result.failures == []  # nothing reported, nothing to save
    assert len(result.slow) == 1 and "slow, not hung" in result.slow[0]
    assert "finished in 3." in result.slow[0]
