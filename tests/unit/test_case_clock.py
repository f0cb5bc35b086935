"""The case's clock (fuzzkern.execution.pool.CaseClock): compiling does not count against the
timeout, a case whose own measured cost explains its length is ``slow``, a stuck one is
``hang``."""

import pytest

from fuzzkern.execution.pool import COMPILE_TIMEOUT, SLOW_EARLY_FACTOR, CaseClock


def test_nothing_reported_is_a_hang_at_the_timeout():
    c = CaseClock(timeout=2.0, start=100.0)
    assert c.wait(100.0) == pytest.approx(2.0)
    assert c.check(101.9) is None
    verdict, message, detail = c.check(102.1)
    assert verdict == "hang"
    assert "ran past the timeout of 2 s" in message and detail["timeout"] == 2.0


def test_compiling_stops_the_clock():
    c = CaseClock(timeout=2.0, start=0.0)
    c.event(["compile", True], 0.5)
    # compiling for 30 s: no verdict, the clock waits for the compile limit
    assert c.check(30.0) is None
    assert c.wait(30.0) == pytest.approx(COMPILE_TIMEOUT - 29.5)
    c.event(["compile", False], 30.5)
    assert c.compile_seconds == pytest.approx(30.0) and c.compiles == 1
    assert c.ran(31.0) == pytest.approx(1.0)
    assert c.check(31.9) is None  # 0.5 + 1.4 s of work
    verdict, message, detail = c.check(32.1)
    assert verdict == "hang"
    assert "plus 30.0 s compiling, not counted" in message
    assert detail["compile_seconds"] == pytest.approx(30.0)


def test_a_compile_past_the_compile_limit_is_slow_not_hang():
    c = CaseClock(timeout=2.0, compile_timeout=10.0, start=0.0)
    c.event(["compile", True], 0.1)
    c.event(["compile", False], 6.1)
    c.event(["compile", True], 6.2)
    assert c.check(10.0) is None  # 6 + 3.8 s of compiling: the limit is on the case's total
    verdict, message, detail = c.check(10.3)
    assert verdict == "slow"
    assert "compile limit of 10 s" in message and "1 compilation(s) done" in message
    assert detail["compile_timeout"] == 10.0 and detail["compile_seconds"] > 10.0


def test_programs_that_would_take_minutes_are_slow_at_once():
    c = CaseClock(timeout=2.0, start=0.0)
    # 1 of 2560 programs done in 0.1 s: about 256 s for the launch
    c.event(["progress", 1, 2560, 0.1, 0.1], 0.3)
    verdict, message, detail = c.check(0.3)
    assert verdict == "slow"
    assert f"{SLOW_EARLY_FACTOR:g} times the timeout of 2 s" in message
    assert "1 of 2560 programs" in message and "about 256.00 s for the launch" in message
    assert "about 256.20 s: 0.30 s so far, plus 255.90 s for the 2559 programs left" in message
    assert detail["progress"] == {"done": 1, "total": 2560, "seconds": 0.1, "slowest": 0.1}


def test_a_launch_within_twice_the_timeout_runs_on_and_is_slow_at_it():
    c = CaseClock(timeout=2.0, start=0.0)
    c.event(["progress", 10, 30, 1.0, 0.11], 1.0)  # about 3 s in all: not stopped early
    assert c.check(1.0) is None
    c.event(["progress", 19, 30, 1.9, 0.11], 1.95)
    verdict, message, _ = c.check(2.05)
    assert verdict == "slow" and "kept finishing" in message


def test_a_program_that_stops_finishing_is_a_hang():
    c = CaseClock(timeout=2.0, start=0.0)
    c.event(["progress", 2, 16, 0.01, 0.005], 0.02)  # two quick programs, then nothing
    verdict, message, detail = c.check(2.1)
    assert verdict == "hang"
    assert "its current program has run 2.1 s" in message
    assert detail["stalled_seconds"] == pytest.approx(2.08)


def test_a_finished_launch_is_no_evidence_of_progress():
    c = CaseClock(timeout=2.0, start=0.0)
    c.event(["progress", 5, 10, 0.5, 0.1], 0.5)
    c.event(["launch", False], 1.0)  # then the launcher does something else until 2 s
    assert c.check(2.1)[0] == "hang"


def test_a_late_report_is_dated_by_its_age():
    """A report the worker's reporter thread sends while a program runs says how long ago
    that program started: the clock counts the stall from then, not from the report."""
    c = CaseClock(timeout=2.0, start=0.0)
    c.event(["progress", 2, 16, 0.01, 0.005, 0.11], 0.13)  # about the program's start: 0.02
    verdict, message, detail = c.check(2.1)
    assert verdict == "hang"
    assert detail["stalled_seconds"] == pytest.approx(2.08)


def test_a_case_too_expensive_for_the_budget_stops_early_as_slow():
    # a 60 s timeout, but the target's share allows one case 10 s at most
    c = CaseClock(timeout=60.0, start=0.0, cost_cap=10.0)
    c.event(["progress", 10, 100, 0.5, 0.06], 0.6)  # about 5 s in all: runs on
    assert c.check(0.6) is None
    c.event(["progress", 20, 400, 1.2, 0.07], 1.3)  # about 24 s in all: past the cap
    verdict, message, detail = c.check(1.3)
    assert verdict == "slow"
    assert "past 10.0 s, the most one case may cost" in message
    assert "about 24.10 s: 1.30 s so far, plus 22.80 s for the 380 programs left" in message
    assert "too expensive for the budget, not a failure" in message
    assert detail["cost_cap"] == 10.0
    # without a cap the same launch runs on (24 s < twice the timeout)
    free = CaseClock(timeout=60.0, start=0.0)
    free.event(["progress", 20, 400, 1.2, 0.07], 1.3)
    assert free.check(1.3) is None


def test_a_stuck_program_is_a_hang_under_a_cost_cap_too():
    c = CaseClock(timeout=20.0, start=0.0, cost_cap=5.0)
    c.event(["progress", 5, 10, 0.5, 0.1], 0.6)  # about 1 s in all, then nothing more
    assert c.check(4.0) is None and c.check(15.0) is None  # no cap: the projection is 1 s
    verdict, _, detail = c.check(20.7)
    assert verdict == "hang" and "cost_cap" not in detail


def _figures(message):
    """The projection's figures as the message prints them."""
    import re

    m = re.search(r"about ([\d.]+) s: ([\d.]+) s so far, plus ([\d.]+) s for the (\d+) "
                  r"programs left of its launch \((\d+) of (\d+) programs in ([\d.]+) s, "
                  r"([\d.]+) s each .*about ([\d.]+) s for the launch\)", message)
    assert m, message
    return [float(g) for g in m.groups()]


def test_the_slow_case_estimate_adds_up_to_its_own_figures():
    # the note: 2 of 4 programs in 0.08 s after the case had worked 5 s (earlier
    # launches); "would take about 5.1 s" with "about 0.2 s for the launch" read as a
    # contradiction: the projection is the case's, so far plus what its launch has left
    c = CaseClock(timeout=60.0, start=0.0, cost_cap=5.0)
    c.event(["progress", 2, 4, 0.0824, 0.045], 5.0)
    assert c.projection(5.0) == pytest.approx((5.0824, 5.0, 0.0824))
    # nearly done: stopping it would lose its 5 s and save 0.08 s; it runs on
    assert c.check(5.01) is None
    # the same case with 400 programs left past the cap: stopped, and the figures agree
    c.event(["progress", 2, 402, 0.0824, 0.045], 5.0)
    verdict, message, _ = c.check(5.01)
    assert verdict == "slow"
    projected, so_far, left, programs_left, done, total, seconds, each, launch = _figures(
        message)
    assert (programs_left, done, total) == (400, 2, 402)
    assert projected == pytest.approx(so_far + left, abs=0.011)
    assert left == pytest.approx(each * programs_left, rel=0.01)
    assert launch == pytest.approx(each * total, rel=0.01)
    assert seconds == pytest.approx(each * done, rel=0.01)
    assert projected > 5.0 and "stopped after 5.0 s" in message
    # past twice the timeout: the same figures
    early = CaseClock(timeout=2.0, start=0.0)
    early.event(["progress", 3, 300, 0.3, 0.1], 1.0)
    verdict, message, _ = early.check(1.0)
    projected, so_far, left, *_ = _figures(message)
    assert verdict == "slow" and projected == pytest.approx(so_far + left, abs=0.011)
    assert (so_far, left) == (1.0, 29.7)


# -- a loaded machine: work is the worker's CPU time, not the clock's ----------------------------


class _Cpu:
    """The worker's CPU time as a CpuMeter reports it, set by the test: (seconds, runnable)."""

    def __init__(self, seconds=100.0, runnable=True):
        self.seconds, self.runnable = seconds, runnable

    def __call__(self):
        return self.seconds, self.runnable


def test_a_launch_slowed_by_the_machines_load_is_not_past_the_cost_cap():
    # the loaded 2-core box: 20 of 400 programs took 1.2 s by the clock but 0.3 s of
    # the worker's CPU (a quarter of a core): the launch's own cost is about 6 s, not 24 s
    cpu = _Cpu(100.0)
    c = CaseClock(timeout=60.0, start=0.0, cost_cap=10.0, cpu=cpu)
    c.event(["progress", 20, 400, 1.2, 0.07, 0.0, 0.3, 100.32], 1.3)
    assert c.projection(1.3) == pytest.approx((0.32 + 380 * 0.015, 0.32, 380 * 0.015))
    assert c.check(1.3) is None
    # the same launch whose programs cost that much CPU each is past the cap, as before
    c.event(["progress", 20, 400, 1.2, 0.07, 0.0, 1.2, 101.3], 1.3)
    verdict, message, detail = c.check(1.3)
    assert verdict == "slow" and "too expensive for the budget" in message
    assert detail["progress"]["cpu"] == 1.2


def test_a_small_sample_is_past_the_cost_cap_only_by_twice_the_cap():
    """Run 20 of the suite under load (tests/unit/test_slow_under_load.py): a correct 0.4 s
    case's first 25 of 6666 programs cost 0.15 ms of CPU each (the launch's warm-up, a
    loaded core's caches: 2.5 times its later pace) and projected it at 1.01 s against its
    1 s cap: stopped as slow after 0.1 s. A sample under 5% of the cap stops a case only past
    twice the cap; with more programs the cap holds as before."""
    cpu = _Cpu(10.0)
    c = CaseClock(timeout=1.0, start=0.0, cost_cap=1.0, cpu=cpu)
    c.event(["progress", 25, 6666, 0.0133, 0.001, 0.0, 0.00374, 10.01], 0.1)
    assert c.projection(0.1)[0] == pytest.approx(1.0, abs=0.02)
    assert c.check(0.1) is None  # 0.004 s of CPU: a small sample, not past twice the cap
    cpu.seconds = 10.3
    c.event(["progress", 2000, 6666, 0.8, 0.001, 0.0, 0.12, 10.3], 0.85)  # its real pace
    assert c.check(0.85) is None  # about 0.4 s in all
    # a small sample far past the cap still stops at once; a large one just past it too
    early = CaseClock(timeout=1.0, start=0.0, cost_cap=1.0, cpu=_Cpu(10.0))
    early.event(["progress", 25, 20000, 0.01, 0.001, 0.0, 0.004, 10.01], 0.1)
    assert early.check(0.1)[0] == "slow"  # about 3.2 s
    late = CaseClock(timeout=1.0, start=0.0, cost_cap=1.0, cpu=_Cpu(10.0))
    late.event(["progress", 500, 6000, 0.1, 0.001, 0.0, 0.1, 10.1], 0.15)
    verdict, message, _ = late.check(0.15)  # 0.1 s of CPU: about 1.2 s, past the cap
    assert verdict == "slow" and "too expensive for the budget" in message


def test_the_loaded_launchs_message_gives_both_clocks_and_its_figures_add_up():
    c = CaseClock(timeout=2.0, start=0.0, cpu=_Cpu(0.0))
    # 1 of 2560 programs: 0.4 s by the clock, 0.1 s of CPU: about 256 s of work
    c.event(["progress", 1, 2560, 0.4, 0.4, 0.0, 0.1, 0.1], 0.5)
    verdict, message, _ = c.check(0.5)
    assert verdict == "slow"
    assert ("1 of 2560 programs in 0.1 s of the worker's CPU time (0.4 s by the clock: the "
            "machine is loaded)") in message
    assert "about 256.00 s: 0.10 s so far, plus 255.90 s for the 2559 programs left" in message


def test_past_the_timeout_by_the_clock_only_a_launch_runs_on():
    cpu = _Cpu(10.0)
    c = CaseClock(timeout=2.0, start=0.0, cpu=cpu)
    # 30 programs: at the clock's 2.05 s the worker had worked 0.95 s (half a core)
    c.event(["progress", 19, 30, 1.9, 0.11, 0.0, 0.95, 10.95], 1.95)
    assert c.check(2.05) is None
    assert c.wait(2.05) > 0  # checked again, not spun on
    # its own work passes the timeout: slow
    c.event(["progress", 29, 40, 3.9, 0.11, 0.0, 1.95, 11.8], 3.95)
    assert c.check(4.2) is None  # 1.8 s, plus 0.25 s since at half a core: 1.93 s
    verdict, message, _ = c.check(4.5)  # 1.8 + 0.55 / 2: 2.08 s
    assert verdict == "slow" and "kept finishing" in message
    assert "of the worker's CPU time" in message


def test_a_stuck_program_is_a_hang_on_a_loaded_machine_too():
    c = CaseClock(timeout=2.0, start=0.0, cpu=_Cpu(5.0))
    c.event(["progress", 2, 16, 0.04, 0.02, 0.0, 0.01, 5.01], 0.05)
    verdict, _, detail = c.check(2.1)
    assert verdict == "hang" and detail["stalled_seconds"] == pytest.approx(2.05)


def test_a_computing_worker_without_progress_is_timed_by_its_cpu_a_waiting_one_by_the_clock():
    cpu = _Cpu(50.0, runnable=True)
    c = CaseClock(timeout=2.0, start=0.0, cpu=cpu)
    cpu.seconds = 51.0  # 1 s of work in 2.1 s: a loaded machine
    assert c.check(2.1) is None
    cpu.seconds = 52.2  # its own work passes the timeout: hang
    verdict, message, detail = c.check(4.5)
    assert verdict == "hang"
    assert "(2.2 s of it the worker's CPU time)" in message and detail["cpu_seconds"] == 2.2
    # a worker that waits (asleep, on a lock, on a device) is not runnable: the clock decides
    waiting = _Cpu(50.0, runnable=False)
    c = CaseClock(timeout=2.0, start=0.0, cpu=waiting)
    assert c.check(2.1)[0] == "hang"


def test_a_computing_worker_caught_off_its_core_for_one_look_is_not_a_hang():
    """On a loaded machine one look may find a computing worker in state S or D (a page
    fault, a pipe write): its CPU time grew since the last look, so it computes (a correct
    case was once a hang so, tests/unit/test_slow_under_load.py). Stuck there, with no CPU
    time added, it is a hang at the next look."""
    cpu = _Cpu(50.0, runnable=False)
    c = CaseClock(timeout=1.0, start=0.0, cpu=cpu)
    cpu.seconds = 50.4  # 0.4 s of work in 1.1 s, and not runnable at this moment
    assert c.check(1.1) is None
    cpu.seconds = 50.6  # still computing between the looks
    assert c.check(1.6) is None
    verdict, message, _ = c.check(2.1)  # no CPU time since the last look: stuck
    assert verdict == "hang" and "(0.6 s of it the worker's CPU time)" in message


def test_compiling_is_left_out_of_the_cpu_time_too():
    cpu = _Cpu(0.0)
    c = CaseClock(timeout=2.0, start=0.0, cpu=cpu)
    c.event(["compile", True], 0.1)
    cpu.seconds = 30.0
    c.event(["compile", False], 30.1)
    assert c.compile_cpu == pytest.approx(30.0)
    cpu.seconds = 31.0  # 1.1 s of work (0.1 before the compilation, 1.0 after)
    assert c.worked(31.2, cpu.seconds) == pytest.approx(1.0)
    assert c.check(31.2) is None  # 1.1 s by the clock
    cpu.seconds = 31.5
    assert c.check(32.3) is None  # 2.2 s by the clock, 1.5 s of work: a loaded machine
