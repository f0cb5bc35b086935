"""Memory-safety and hygiene checks in compiled mode, on a real GPU.

Marked ``gpu``: skipped without CUDA. Written without a GPU to run them on: the CPU half of
each mechanism is tested in tests/unit/test_hygiene.py (red zones and the compiled-mode
protocol on CPU storages, the memcheck log parser, the sanitized worker's protocol); these
tests check the same on CUDA storages and real kernels. Run on the GPU machine with
``bench/gpu_suite.sh tests``.
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
QUALITY = os.path.join(HERE, "..", "quality", "kernels")


def _fuzz(spec, budget=60.0, modes=("compiled",), **kw):
    # the first failure ends the run (the planted targets have one bug each): seconds, not the
    # whole budget; the no-false-alarm tests bound their runs by cases instead
    kw.setdefault("max_failures", 1)
    (lt,) = loader.load(spec)
    pool = WorkerPool(env=worker_env())
    try:
        opts = engine.CampaignOptions(budget=budget, modes=modes, seed=0, database=None, **kw)
        return engine.fuzz_target(lt, pool, opts, budget)
    finally:
        pool.close()


def _quality(module, name="buggy"):
    return f"{os.path.join(QUALITY, module)}.py::{name}"


def test_red_zone_guards_on_cuda_storages():
    import torch
    import triton
    import triton.language as tl

    from fuzzkern.execution import hygiene

    @triton.jit
    def store_one_past(out_ptr, n):
        tl.store(out_ptr + n, 1.0)

    x = torch.arange(8.0)
    view, zone = hygiene.place_in_red_zone(x, "cuda", 4096, name="out")
    assert view.is_cuda and torch.equal(view.cpu(), x)
    assert hygiene.check_red_zone(zone) == []
    store_one_past[(1,)](view, 8)
    torch.cuda.synchronize()
    (f,) = hygiene.check_red_zone(zone)
    assert (f["where"], f["elements"]) == ("past the end", [1])


def test_off_by_one_store_is_oob_write_in_compiled_mode():
    # The interpreter would say oob first; compiled alone, only the red zone sees the write
    # (the caching allocator's slack hides it otherwise: docs/architecture.md, execution).
    result = _fuzz(_quality("oob_store"))
    assert [f.outcome.verdict for f in result.failures] == ["oob-write"]
    f = result.failures[0]
    (finding,) = f.outcome.modes["compiled"].detail["oob_write"]
    assert (finding["argument"], finding["where"], finding["elements"]) == (
        "the output", "past the end", [1])
    assert f.case.dims == {"N": 1}


def test_unwritten_output_and_mutated_input_in_compiled_mode():
    result = _fuzz(_quality("floor_grid"))
    assert [f.outcome.verdict for f in result.failures] == ["unwritten-output"]
    result = _fuzz(_quality("scratch_input"))
    assert [f.outcome.verdict for f in result.failures] == ["input-mutated"]
    assert result.failures[0].case.dims == {"N": 1}


def test_overflow_assert_is_named_in_compiled_mode():
    result = _fuzz(_quality("int32_index"), debug=True)
    assert [f.outcome.verdict for f in result.failures] == ["overflow"]
    mode = result.failures[0].outcome.modes["compiled"]
    assert mode.detail["overflow"]["operation"] == "mul"
    assert mode.detail["poisoned"] is True


def test_atomic_float_reduction_is_nondeterministic():
    result = _fuzz(f"{PLANTED}::atomic_sum", repeat_compiled=5, budget=90.0)
    assert [f.outcome.verdict for f in result.failures] == ["nondeterministic"]
    spread = result.failures[0].outcome.modes["compiled"].detail["nondeterministic"]
    assert spread["count"] >= 1 and 0 < spread["max_abs_diff"] < 1e-2


def test_correct_twins_are_clean_with_every_check_in_both_modes():
    for module in ("oob_store", "floor_grid", "scratch_input", "int32_index",
                   "ignored_stride"):
        result = _fuzz(_quality(module, "correct"), budget=20.0,
                       modes=("interpret", "compiled"), debug=True, repeat_compiled=2,
                       max_examples=25)
        assert result.error is None, result.error
        assert result.failures == [], (module, [f.outcome.message for f in result.failures])
        assert result.counts["pass"] >= 5


@pytest.mark.parametrize("name", [lt.target.id for lt in loader.load("fuzzkern.targets.builtin")])
def test_builtin_targets_are_deterministic_and_in_bounds(name):
    (lt,) = [x for x in loader.load("fuzzkern.targets.builtin") if x.target.id == name]
    pool = WorkerPool(env=worker_env())
    try:
        opts = engine.CampaignOptions(budget=20.0, modes=("compiled",), seed=2,
                                      repeat_compiled=3, database=None, max_examples=40)
        result = engine.fuzz_target(lt, pool, opts, 20.0)
    finally:
        pool.close()
    assert result.failures == [], [f.outcome.message for f in result.failures]
    assert result.counts["pass"] >= 5


def test_sanitize_reports_the_kernel_line_or_refuses_cleanly():
    from fuzzkern.execution.sanitizer import SanitizerUnavailable, probe, sanitized_pool

    try:
        path = probe()
    except SanitizerUnavailable as e:
        pytest.skip(f"compute-sanitizer unavailable here: {e}")
    (lt,) = loader.load(_quality("oob_store"))
    pool = sanitized_pool(path)
    try:
        # Every case runs under memcheck (seconds each, compilations included): bound the
        # search, the shrink, the minimizer and the explanations so the test ends in minutes.
        opts = engine.CampaignOptions(budget=90.0, modes=("compiled",), seed=0,
                                      database=None, sanitize=path,
                                      checks={"redzone": False}, max_examples=20,
                                      grace_min=30.0, grace_fraction=0.5, minimize_runs=8,
                                      explain=False)
        result = engine.fuzz_target(lt, pool, opts, 90.0)
    finally:
        pool.close()
    assert [f.outcome.verdict for f in result.failures] == ["oob"]
    memcheck = result.failures[0].outcome.modes["compiled"].detail["memcheck"]
    assert memcheck[0]["access"] == "write"
    assert "oob_store.py" in memcheck[0]["location"]
