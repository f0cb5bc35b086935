"""The run's summary lines and report fields gathered per target: compile wait against compile
work (the worker pool's ``compile_stats`` over each slice, summed), reference parity counts, the
compile-ahead processes split between ``-j`` processes."""

from fuzzkern import cli
from fuzzkern.search import engine, schedule
from fuzzkern.search.engine import TargetResult


def _with(compile_stats=None, parity=None):
    r = TargetResult("t", "t")
    if compile_stats:
        r.compile = compile_stats
    if parity:
        engine.add_parity(r, parity)
    return r


def test_compile_stats_grow_per_slice_and_sum_per_run():
    before = {"compile_wait": 1.0, "compile_work": 2.0, "compiles": 3, "served_ahead": 1,
              "ahead": {"processes": 4, "compiled": 10, "failed": 0, "errors": ["a"]}}
    after = {"compile_wait": 4.0, "compile_work": 12.5, "compiles": 7, "served_ahead": 3,
             "ahead": {"processes": 4, "compiled": 30, "failed": 2, "errors": ["a", "b"]}}
    piece = engine.compile_delta(before, after)
    assert piece == {"compile_wait": 3.0, "compile_work": 10.5, "compiles": 4,
                     "served_ahead": 2, "ahead": {"processes": 4, "compiled": 20, "failed": 2,
                                                  "errors": ["b"]}}
    total = TargetResult("t", "t")
    schedule.merge(total, _with(piece))
    schedule.merge(total, _with(piece))
    assert total.compile["compiles"] == 8 and total.compile["ahead"]["processes"] == 4
    line = cli._compile_line([total, _with(piece)], 120.0)
    assert line == ("compile wait 9.0 s (7.5% of 120 s), compile work 31.5 s; 6 of 12 "
                    "compilations served from 60 compiled ahead by 4 processes (6 failed), "
                    "hit rate 10.0%")
    why = "hit rate 1/100 (1.0%) below 5% after 100 jobs compiled"
    stopped = engine.compile_delta(before, {**after, "ahead": {**after["ahead"], "stopped": why}})
    assert stopped["ahead"]["stopped"] == why
    assert cli._compile_line([_with(stopped)], 120.0).endswith(
        "(2 failed), hit rate 10.0%; stopped: " + why)
    off = {"compile_wait": 30.0, "compile_work": 30.0, "compiles": 5, "served_ahead": 0,
           "ahead": None}
    assert cli._compile_line([_with(off)], 300.0) == (
        "compile wait 30.0 s (10.0% of 300 s); compiling ahead off")
    assert cli._compile_line([TargetResult("t", "t")], 10.0) is None  # nothing compiled


def test_reference_parity_counts_add_up_and_keep_the_first_reason():
    r = _with(parity={"device": 30, "judged": 4, "disagreed": 0})
    engine.add_parity(r, {"device": 10, "judged": 2, "disagreed": 1, "off": "disagreed"})
    engine.add_parity(r, {"device": 1, "judged": 0, "disagreed": 0, "off": "later"})
    engine.add_parity(r, None)
    assert (r.parity_device, r.parity_judged, r.parity_disagreed) == (41, 6, 1)
    assert r.parity_off == "disagreed"
    assert cli._parity_total([r, r]) == {"device": 82, "judged": 12, "disagreed": 2}


def test_compile_ahead_processes_are_split_between_the_fuzzing_processes(monkeypatch):
    from fuzzkern.execution import ahead

    assert schedule._ahead_share(16, 4) == "4" and schedule._ahead_share("off", 2) == "0"
    monkeypatch.delenv(ahead.AHEAD_ENV, raising=False)
    monkeypatch.setattr(ahead, "default_size", lambda cores=None: 15)
    assert schedule._ahead_share(None, 4) == "3"  # (15 + 1) // 4 - 1
    monkeypatch.setenv(ahead.AHEAD_ENV, "2")
    assert schedule._ahead_share(None, 4) is None  # the user's setting stands
