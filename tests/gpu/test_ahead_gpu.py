"""Compiling ahead on a real GPU (docs/scaling.md, "Compile ahead"): a compiled search over a
kernel autotuned over 24 configs waits far less for compilations when the worker pool's
compile processes compile the other configs as soon as the first one is needed, and its
worker's compilations are then served from Triton's cache.

Marked ``gpu``: skipped without CUDA.
"""

import os

import pytest

from fuzzkern.execution.devices import worker_env
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader

pytestmark = pytest.mark.gpu

TARGETS = os.path.join(os.path.dirname(__file__), "ahead_targets.py")


def _search(cache, compile_ahead, cases=30):
    (lt,) = loader.load(f"{TARGETS}::many_configs")
    pool = WorkerPool(env={**worker_env(), "TRITON_CACHE_DIR": str(cache)},
                      compile_ahead=compile_ahead)
    try:
        opts = engine.CampaignOptions(budget=240, modes=("compiled",), seed=0,
                                      max_examples=cases)
        result = engine.fuzz_target(lt, pool, opts, 240)
        return result, pool.compile_stats()
    finally:
        pool.close()


def test_compile_wait_falls_with_compiling_ahead(tmp_path):
    off_result, off = _search(tmp_path / "off", 0)
    on_result, on = _search(tmp_path / "on", 8)
    assert off_result.cases >= 20 and on_result.cases >= 20  # the same draws, seed 0
    assert off["ahead"] is None and off["compiles"] >= 5, off  # compile-heavy without it
    assert on["ahead"]["compiled"] >= 10 and on["ahead"]["failed"] == 0, on
    assert on["served_ahead"] >= 3, on
    assert on["compile_wait"] < 0.5 * off["compile_wait"], (on, off)
