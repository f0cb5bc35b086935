"""Attribution of compiled-only differences on a real GPU (fuzzkern.judge.causes): each planted
cause in tests/gpu/planted_causes.py is found, shrunk, and given its cause and verdict.

Marked ``gpu``: skipped without CUDA. Run on the GPU machine with ``bench/gpu_suite.sh``.
"""

import os

import pytest

from fuzzkern.execution.devices import worker_env
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader

pytestmark = pytest.mark.gpu

PLANTED = os.path.join(os.path.dirname(__file__), "planted_causes.py")


def _fuzz(name, modes=("compiled",), budget=40.0):
    (lt,) = loader.load(f"{PLANTED}::{name}")
    pool = WorkerPool(env=worker_env())
    try:
        # one planted cause each: the first failure ends the run; an accuracy finding is not
        # a failure, so the case count bounds those runs (drawn cases: value variants, which
        # would count as cases and keep every value of the first shape, are off)
        opts = engine.CampaignOptions(budget=budget, modes=modes, seed=0, max_failures=1,
                                      max_examples=100, amortize=0.0)
        return engine.fuzz_target(lt, pool, opts, budget)
    finally:
        pool.close()


def test_fused_multiply_add_is_named_and_is_an_accuracy_finding():
    result = _fuzz("fma_cancel")
    assert result.failures == []  # not a kernel bug
    assert result.accuracy, result.counts
    _, outcome = result.accuracy[0]
    assert outcome.verdict == "accuracy"
    assert "fused multiply-add" in outcome.message
    assert "enable_fp_fusion=False" in outcome.message


def test_flushed_subnormal_is_named_and_is_an_accuracy_finding():
    result = _fuzz("ftz_rsqrt")
    assert result.failures == []
    assert result.accuracy, result.counts
    case, outcome = result.accuracy[0]
    assert "flush" in outcome.message
    assert case.tensors["x"].numel <= 2  # shrunk to the subnormal element


def test_nan_that_fma_exposes_stays_the_kernels_bug_and_says_why():
    result = _fuzz("fma_variance")
    assert [f.outcome.verdict for f in result.failures] == ["kernel-bug"]
    f = result.failures[0]
    assert "fused multiply-add" in f.outcome.message
    assert "clamp" in f.outcome.message
    assert f.case.dims["N"] == 1 and f.case.dims["M"] == 1


def test_drawn_compile_options_reach_launches_that_do_not_set_them():
    import torch

    from fuzzkern.execution.compiled import compile_options

    (lt,) = loader.load(f"{PLANTED}::ftz_rsqrt")
    _rsqrt = lt.target.launcher.__globals__["_rsqrt"]

    x = torch.ones(128, device="cuda")
    out = torch.empty_like(x)
    with compile_options(None, {"num_warps": 2}):
        drawn = _rsqrt[(1,)](x, out, 128, BLOCK=128)
        own = _rsqrt[(1,)](x, out, 128, BLOCK=128, num_warps=8)  # the launch's own choice
    with compile_options({"num_warps": 1}, {"num_warps": 2}):
        forced = _rsqrt[(1,)](x, out, 128, BLOCK=128, num_warps=8)  # a re-run's override
    assert (drawn.metadata.num_warps, own.metadata.num_warps,
            forced.metadata.num_warps) == (2, 8, 1)
