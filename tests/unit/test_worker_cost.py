"""A warm worker's per-case cost: the stage timings it reports, and the output capture that
stays open across cases (one pipe and drain thread per worker, an end marker per case).
Real worker processes, real Triton interpreter."""

from __future__ import annotations

import time

import pytest

from fuzzkern.case.model import Case, Layout, TensorCase, Values
from fuzzkern.execution import stages
from fuzzkern.execution.pool import OUTPUT_LIMIT, WorkerPool
from fuzzkern.judge.outcome import Verdict
from fuzzkern.target import loader

CHATTY = '''
import os, sys, ctypes, fuzzkern
from fuzzkern import strategies as fks

def launch(x):
    n = x.shape[0]
    if n == 1:
        pass  # prints nothing
    elif n == 2:
        print("python-stdout-2")
        print("python-stderr-2", file=sys.stderr)
        ctypes.CDLL(None).printf(b"c-printf-2\\n")  # buffered by C stdio, flushed at the end
    elif n == 3:
        os.write(1, b"A" * (3 * LIMIT))  # more than the pipe holds and than is kept
    elif n == 4:
        # the case points its stdout elsewhere and never restores it
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        print("lost-4", flush=True)
    return 2 * x

LIMIT = {limit}
t = fuzzkern.Target(launcher=launch, reference=lambda x: 2 * x,
    inputs=fks.inputs(x=fks.tensors(("N",))), dims={{"N": fks.sizes(max_value=8)}})
'''


def _case_n(n: int) -> Case:
    layout = Layout((0,), (1,), (0,), 0, ())
    return Case({"N": n}, {"x": TensorCase.build((n,), "float32", layout, Values(0))})


@pytest.fixture
def chatty(tmp_path):
    path = tmp_path / "chatty.py"
    path.write_text(CHATTY.format(limit=OUTPUT_LIMIT))
    return f"{path}::t"


def test_each_case_gets_exactly_its_own_output(chatty):
    pool = WorkerPool()
    opts = {"modes": ["interpret"]}
    try:
        outs = {n: pool.run(chatty, _case_n(n).to_json(), opts, 60) for n in (2, 1, 3, 4, 5, 2)}
        assert all(o.verdict == Verdict.PASS for o in outs.values())
        assert pool.started == 1  # one worker served every case
    finally:
        pool.close()
    two = outs[2]
    assert "python-stdout-2" in two.output and "python-stderr-2" in two.output
    assert "c-printf-2" in two.output  # C stdio's buffer is flushed before the case ends
    assert two.output_bytes == len(two.output.encode())
    assert outs[1].output == "" and outs[1].output_bytes == 0
    # counted in full, kept up to the limit; none of it leaks into the next case
    assert outs[3].output_bytes == 3 * OUTPUT_LIMIT
    assert outs[3].output == "A" * OUTPUT_LIMIT
    assert outs[4].output_bytes == 0  # it wrote to /dev/null
    # the case after it is captured again: its descriptor was pointed back at the pipe
    assert outs[5].output == "" and outs[5].output_bytes == 0


def test_output_after_a_redirecting_case_is_captured(chatty):
    pool = WorkerPool()
    opts = {"modes": ["interpret"]}
    try:
        pool.run(chatty, _case_n(4).to_json(), opts, 60)
        again = pool.run(chatty, _case_n(2).to_json(), opts, 60)
    finally:
        pool.close()
    assert "python-stdout-2" in again.output and "c-printf-2" in again.output


def test_a_worker_reports_where_a_case_spent_its_time():
    from hypothesis import find

    (lt,) = loader.load("fuzzkern.targets.builtin:vector_add")
    case = find(lt.target.cases(), lambda c: c.dims["N"] >= 100)
    pool = WorkerPool()
    opts = {"modes": ["interpret"]}
    try:
        pool.run(lt.ref, case.to_json(), opts, 60)  # warm-up
        start = time.monotonic()
        outcome = pool.run(lt.ref, case.to_json(), opts, 60)
        wall = time.monotonic() - start
    finally:
        pool.close()
    assert outcome.verdict == Verdict.PASS, outcome.message
    timings = outcome.timings
    for name in ("decode", "materialize", "prepare", "install", "launch", "checks",
                 "reference", "compare", "encode", "capture", "ipc"):
        assert timings.get(name, -1) >= 0, (name, timings)
    assert timings["launch"] > 0 and timings["reference"] > 0 and timings["compare"] > 0
    # exclusive stages: together they are the round trip, no more
    assert sum(timings.values()) <= wall + 1e-3
    assert sum(timings.values()) >= 0.9 * wall
    # a measurement, not a result: never in the outcome's JSON (corpus entries)
    assert "timings" not in outcome.to_json()


def test_stages_are_exclusive_and_nest():
    start = time.monotonic()
    timer = stages.begin()
    with stages.stage("outer"):
        time.sleep(0.02)
        with stages.stage("inner"):
            time.sleep(0.03)
        time.sleep(0.01)
    seconds = stages.finish(timer)
    wall = time.monotonic() - start
    assert seconds["inner"] >= 0.025 and seconds["outer"] >= 0.025  # 0.03 s each, at least
    # the inner stage's time is not also the outer's: together no more than the clock saw (a
    # bound that holds however long a loaded machine stretched the sleeps)
    assert seconds["inner"] + seconds["outer"] <= wall + 1e-3, (seconds, wall)
    assert stages._current is None
    with stages.stage("untimed"):  # no timer running: nothing recorded, nothing raised
        pass
    assert "untimed" not in seconds


def test_a_quick_launch_reports_nothing_and_a_stuck_one_is_reported_while_it_runs():
    from fuzzkern.execution import progress

    events: list[list[object]] = []
    progress._channel = events.append
    try:
        meter = progress.LaunchMeter()
        meter.begin(8)
        for _ in range(8):  # eight programs in microseconds: no message at all
            meter.tick()
        meter.end()
        assert events == []
        meter.begin(8)
        meter.tick()
        time.sleep(0.01)
        meter.tick()  # program 1 finished; program 2 then runs for 0.5 s (stuck, say)
        time.sleep(0.5)
        # the reporter thread reported program 1 done while program 2 ran, with its age
        assert len(events) == 1, events
        kind, done, total, seconds, slowest, age, cpu, cpu_at = events[0]
        assert (kind, done, total) == ("progress", 1, 8)
        # the finished programs' time from the first one's start: one program, the slowest
        assert 0.01 <= float(slowest) == float(seconds) < 0.3
        assert 0.0 < float(age) <= 0.5
        # and what they took of the worker's CPU (asleep: next to nothing), and its CPU then
        assert 0.0 <= float(cpu) < 0.005
        assert float(cpu_at) <= time.process_time()
        meter.end()
        assert events[-1] == ["launch", False]  # the parent drops this launch's progress
    finally:
        progress._channel = None
        progress.quiet()
