"""The case floor (issue 43, point 4; fuzzkern/search/floor.py): a target whose budget ran out
before the floor's cases gets more time, from its measured case cost, at most its budget again,
and the summary says so. Real worker, real interpreter; cases counted, not seconds."""

from __future__ import annotations

import os

from click.testing import CliRunner

from fuzzkern import cli
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine, floor
from fuzzkern.target import loader

SLOW = os.path.join(os.path.dirname(__file__), "..", "fixtures", "slow_cases.py")


def test_a_target_under_the_floor_is_fuzzed_up_to_it():
    (lt,) = loader.load(SLOW)
    from fuzzkern.case.model import Case, Layout, TensorCase

    pool = WorkerPool()
    try:
        # a warm worker (its start is no case's cost), then a budget that buys a few cases
        warm = Case({"N": 4}, {"x": TensorCase.build((4,), "float32", Layout.contiguous(1)),
                               "y": TensorCase.build((4,), "float32", Layout.contiguous(1))})
        assert pool.run(lt.ref, warm.to_json(), {"modes": ["interpret"]}, 120).verdict == "pass"
        # 0.3 s a case: at most 20 cases in 6 s however fast the machine, and at least one
        # however loaded
        opts = engine.CampaignOptions(budget=6.0, modes=("interpret",), seed=3, explain=False)
        result = engine.fuzz_target(lt, pool, opts, opts.budget)
        before = result.cases
        assert 0 < before < 30 and result.ran_out, result
        topup = floor.top_up(lt, pool, opts, result, 30, cap=120.0)
    finally:
        pool.close()
    assert topup is not None and topup.before == before
    assert result.cases >= 30 and topup.after == result.cases, topup
    assert not result.failures and result.error is None
    assert "under the case floor 30: fuzzed" in topup.text() and "(reached the floor)" in \
        topup.text()
    # the added cases are drawn from other seeds: the line says the repeat does not redraw them
    assert (f"the {topup.after - topup.before} added case(s) are fresh draws that 'to repeat' "
            "does not draw again") in topup.text()


def test_a_finished_or_failing_target_gets_no_more_time():
    r = engine.TargetResult("t", "m:t", cases=3, ran_out=False)  # Hypothesis ran out of draws
    assert floor.short(r, 20, None) == 0
    r = engine.TargetResult("t", "m:t", cases=3, ran_out=True, error="boom")
    assert floor.short(r, 20, None) == 0
    r = engine.TargetResult("t", "m:t", cases=3, ran_out=True)
    assert floor.short(r, 20, None) == 17 and floor.short(r, 20, 5) == 2
    assert floor.short(r, 20, 3) == 0  # --max-examples 3 asked for no more


def test_the_cli_tops_up_and_says_so_and_case_floor_0_turns_it_off():
    # 0.3 s a case: at most 13 cases in 4 s however fast the machine, under the floor of 20
    args = ["run", SLOW, "--budget", "4s", "--no-db", "--no-corpus", "--seed", "1"]
    res = CliRunner().invoke(cli.main, [*args, "--case-floor", "20"])
    assert res.exit_code == 0, res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("case floor: ")]
    assert len(lines) == 1 and "slow_cases::slow_add" in lines[0], res.output
    assert "under the case floor 20: fuzzed" in lines[0]
    res = CliRunner().invoke(cli.main, [*args, "--case-floor", "0"])
    assert "case floor:" not in res.output and res.exit_code == 0, res.output
