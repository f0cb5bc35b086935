"""Compile time is not case time, on a real GPU: an autotuned matmul whose configs each
compile for longer than a short timeout is not a ``hang``; compiling past the compile limit is
``slow``. Marked ``gpu``: skipped without CUDA (run with ``bench/gpu_suite.sh tests``)."""

import dataclasses

import pytest
from hypothesis import find

from fuzzkern.execution.devices import worker_env
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.introspect import autotuner_config_counts
from fuzzkern.search import engine
from fuzzkern.target import loader

pytestmark = pytest.mark.gpu

REF = "fuzzkern.targets.builtin:matmul_autotuned"
OPTIONS = {"modes": ["compiled"]}


@pytest.fixture
def pool(tmp_path):
    # a fresh Triton cache: every config compiles for real
    # no compiling ahead: these tests time real compiles in the worker
    p = WorkerPool(env={**worker_env(), "TRITON_CACHE_DIR": str(tmp_path / "triton-cache")},
                   compile_ahead=0)
    yield p
    p.close()


def _cases():
    (lt,) = loader.load(REF)
    case = find(lt.target.cases(), lambda c: c.dims["M"] >= 16 and c.dims["N"] >= 16)
    ((kernel, n),) = autotuner_config_counts(lt.target.launcher).items()
    assert n >= 4
    return lt, [dataclasses.replace(case, configs={kernel: i}) for i in range(n)]


def test_each_config_compiling_past_a_short_timeout_is_not_a_hang(pool):
    lt, cases = _cases()
    # the first case starts CUDA in the worker (counted as the case's work): a long timeout
    warm = pool.run(lt.ref, cases[0].to_json(), OPTIONS, 120.0)
    assert warm.verdict == "pass", warm.message
    # a warm case's own work (launch, reference, checks) takes milliseconds; one compilation
    # of a matmul config takes 0.15-0.5 s on an H200 (0.17 s seen on 2026-12-01)
    timeout = 0.1
    compile_seconds = []
    for case in cases[1:]:  # each forces another config: a real compilation
        outcome = pool.run(lt.ref, case.to_json(), OPTIONS, timeout)
        assert outcome.verdict == "pass", outcome.message
        detail = outcome.modes["compiled"].detail
        assert detail["compiles"] >= 1
        compile_seconds.append(detail["compile_seconds"])
    # the point is made by every config that compiled for longer than the timeout: at least
    # most of them (a fast machine may compile one under it)
    assert sum(s > timeout for s in compile_seconds) >= len(compile_seconds) // 2 + 1, \
        compile_seconds


def test_compiling_past_the_compile_limit_is_slow(pool):
    lt, cases = _cases()
    pool.run(lt.ref, cases[0].to_json(), OPTIONS, 120.0)
    with pool.limits(compile_timeout=0.05):
        outcome = pool.run(lt.ref, cases[1].to_json(), OPTIONS, 60.0)
    assert outcome.verdict == "slow" and not outcome.failed
    assert "compile limit of 0.05 s" in outcome.message


def test_a_campaign_with_a_short_timeout_reports_compile_time_not_hangs(tmp_path):
    (lt,) = loader.load(REF)
    pool = WorkerPool(env={**worker_env(), "TRITON_CACHE_DIR": str(tmp_path / "cache")},
                      compile_ahead=0)
    try:
        # (compiled only: the first case also starts CUDA, counted as its work; a timeout
        # under CUDA's start-up would make every new worker's first case a hang, so the
        # per-config "compile past the timeout" point is made by the test above, case by case)
        opts = engine.CampaignOptions(budget=120.0, modes=("compiled",), seed=0,
                                      timeout=2.0, max_examples=16, database=None,
                                      amortize=0.0)  # 16 drawn cases, not 1 and 15 variants
        result = engine.fuzz_target(lt, pool, opts, 120.0)
    finally:
        pool.close()
    assert result.counts["hang"] == 0 and result.failures == [], result.counts
    # the campaign compiled configs for real (a fresh cache), and says how long that took
    assert result.compiles >= 4 and result.compile_seconds > 0, \
        (result.compiles, result.compile_seconds)
    assert result.counts["pass"] >= 8
