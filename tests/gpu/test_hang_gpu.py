"""A kernel stuck on the GPU is a ``hang`` at about its timeout, as before the case's clock
measured work in its worker's CPU time (a worker waiting on the device computes little or
spins: either way the clock bounds it). Marked ``gpu``: skipped without CUDA."""

import os
import time

import pytest
from hypothesis import find

from fuzzkern.execution.devices import worker_env
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.judge.outcome import Verdict
from fuzzkern.target import loader

pytestmark = pytest.mark.gpu

TARGETS = os.path.join(os.path.dirname(__file__), "spinning_targets.py")


def test_a_kernel_stuck_on_the_device_is_a_hang_at_its_timeout():
    (lt,) = loader.load(f"{TARGETS}::waits_forever")
    case = find(lt.target.cases(), lambda c: True)
    pool = WorkerPool(env=worker_env(), compile_ahead=0)
    try:
        t0 = time.monotonic()
        outcome = pool.run(lt.ref, case.to_json(), {"modes": ["compiled"]}, lt.target.timeout)
        took = time.monotonic() - t0
    finally:
        pool.close()
    assert outcome.verdict == Verdict.HANG, outcome.message
    # the timeout by the clock (compiling not counted), plus the kill
    compiling = outcome.modes["worker"].detail["compile_seconds"]
    assert took - compiling < lt.target.timeout + 10, (took, compiling)
