"""An autotuner config that cannot run on this GPU (it needs more shared memory than the GPU
has) is one upstream's autotuner skips while it benchmarks: a case that forces it is
``unsupported``, not a finding (FlagGems mm on an H200 was an ``error`` so).

Marked ``gpu``: skipped without CUDA (run with ``bench/gpu_suite.sh smoke``).
"""

import dataclasses
import os

import pytest
import torch
from hypothesis import find

from fuzzkern.execution.devices import worker_env
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


UNFIT = os.path.join(os.path.dirname(__file__), "unfit_targets.py") + "::mm_two_configs"


def test_a_config_that_does_not_fit_the_gpu_is_unsupported_not_a_finding(tmp_path):
    """A forced config that runs out of shared memory is one upstream's autotuner skips:
    ``unsupported``, with the reason; the other config's cases pass."""
    (lt,) = loader.load(UNFIT)
    case = find(lt.target.cases(), lambda c: True)
    pool = WorkerPool(env={**worker_env(), "TRITON_CACHE_DIR": str(tmp_path / "cache")},
                      compile_ahead=0)
    try:
        outcomes = [pool.run(lt.ref, dataclasses.replace(case, configs={"_mm": i}).to_json(),
                             {"modes": ["compiled"]}, 120.0) for i in (0, 1)]
        opts = engine.CampaignOptions(budget=120.0, modes=("compiled",), seed=0,
                                      max_examples=20, database=None, amortize=0.0)
        result = engine.fuzz_target(lt, pool, opts, 120.0)
    finally:
        pool.close()
    fits, unfit = outcomes
    assert fits.verdict == "pass", fits.message
    assert unfit.verdict == "unsupported" and not unfit.failed, unfit.message
    assert "config 1 of 2" in unfit.message and "does not run on this GPU" in unfit.message
    assert "OutOfResources" in unfit.message
    assert result.failures == [], [f.outcome.message for f in result.failures]
    assert result.counts["pass"] >= 5 and result.counts.get("unsupported", 0) >= 1, \
        result.counts
