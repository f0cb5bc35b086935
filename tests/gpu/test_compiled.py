"""Compiled mode on a real GPU: three-way verdicts, device faults, config forcing.

Marked ``gpu``: skipped without CUDA. Run on the GPU machine with ``bench/gpu_suite.sh``.
"""

import os

import pytest

from fuzzkern.execution.devices import worker_env
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(__file__)
PLANTED = os.path.join(HERE, "planted_compiled.py")
MODES = ("interpret", "compiled")


def _fuzz(spec, budget=60.0, **kw):
    kw.setdefault("max_failures", 1)  # one planted bug each: the first failure ends the run
    (lt,) = loader.load(spec)
    pool = WorkerPool(env=worker_env())
    try:
        opts = engine.CampaignOptions(budget=budget, modes=MODES, seed=0, **kw)
        return engine.fuzz_target(lt, pool, opts, budget), pool
    finally:
        pool.close()


def test_read_of_memory_not_yet_written_is_compiled_only():
    result, _ = _fuzz(f"{PLANTED}::uninit")
    assert [f.outcome.verdict for f in result.failures] == ["compiled-only"]
    f = result.failures[0]
    assert f.outcome.modes["interpret"].status == "ok"
    assert f.outcome.modes["compiled"].status == "mismatch"
    # two blocks are the least that can race: N = BLOCK + 1 with the smallest BLOCK
    assert f.case.scalars["BLOCK"] == 16
    assert f.case.dims == {"N": 17}


def test_lying_contiguity_hint_is_compiled_only():
    result, _ = _fuzz(f"{PLANTED}::lying_hint")
    assert [f.outcome.verdict for f in result.failures] == ["compiled-only"]
    f = result.failures[0]
    assert f.outcome.modes["interpret"].status == "ok"
    x = f.case.tensors["x"]
    assert x.strides[0] > 1  # only a non-unit stride makes the hint a lie
    assert f.case.dims == {"N": 512}


def test_lying_alignment_hint_faults_only_compiled():
    result, pool = _fuzz(f"{PLANTED}::misaligned_hint")
    assert [f.outcome.verdict for f in result.failures] == ["compiled-only"]
    f = result.failures[0]
    assert f.outcome.modes["interpret"].status == "ok"
    assert f.outcome.modes["compiled"].status == "crash"
    assert "misaligned" in f.outcome.modes["compiled"].error
    assert f.case.tensors["x"].storage_offset % 4 != 0  # not 16-byte aligned
    assert f.case.dims == {"N": 512}
    assert pool.restarts >= 1


def test_illegal_address_does_not_stop_the_campaign():
    result, pool = _fuzz(f"{PLANTED}::illegal", budget=45.0)
    assert result.failures
    assert {f.outcome.verdict for f in result.failures} <= {"crash", "oob"}
    assert pool.restarts >= 1
    # cases kept running after the fault: passes were recorded besides the failures
    assert result.counts["pass"] >= 1


@pytest.mark.parametrize("name", [lt.target.id for lt in loader.load("fuzzkern.targets.builtin")])
def test_builtin_targets_have_no_false_alarm_in_both_modes(name):
    (lt,) = [x for x in loader.load("fuzzkern.targets.builtin") if x.target.id == name]
    pool = WorkerPool(env=worker_env())
    try:
        opts = engine.CampaignOptions(budget=20.0, modes=MODES, seed=1, max_examples=40)
        result = engine.fuzz_target(lt, pool, opts, 20.0)
    finally:
        pool.close()
    assert result.error is None, result.error
    assert result.failures == [], [f.outcome.message for f in result.failures]
    assert result.counts["pass"] >= 5
