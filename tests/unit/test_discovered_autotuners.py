"""Autotuned kernels the launcher's code does not name, reached at run time (a library's
launch wrapper, an ``autograd.Function``): the first case runs each with its first pruned
config and reports it (``configs_used``, ``config_counts``); from then on the target's cases
draw a config index for it, so configs vary across cases, and a case forces the one it drew."""

import dataclasses
import os

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.introspect import autotuner_config_counts
from fuzzkern.search import engine
from fuzzkern.strategies._internal import inputs as fk_inputs
from fuzzkern.target import loader

HERE = os.path.dirname(__file__)
RUNTIME = os.path.join(HERE, "targets", "runtime_autotuners.py")


def _loaded():
    (lt,) = loader.load(f"{RUNTIME}::copied")
    return lt


def test_a_discovered_kernel_gets_a_config_drawn_by_later_cases(monkeypatch):
    lt = _loaded()
    monkeypatch.setitem(fk_inputs.DISCOVERED, lt.target.id, {})
    assert autotuner_config_counts(lt.target.launcher) == {}  # nothing to find statically
    before = engine.draw_cases(lt.target, 12)
    assert all(c.configs == {} for c in before)
    assert fk_inputs.discover(lt.target.id, {"_copy": 3}) == ["_copy"]
    assert fk_inputs.discover(lt.target.id, {"_copy": 3}) == []  # known already
    after = engine.draw_cases(lt.target, 40)
    assert {c.configs["_copy"] for c in after} == {0, 1, 2}


def test_the_search_discovers_the_kernel_and_varies_its_config(monkeypatch):
    lt = _loaded()
    monkeypatch.setitem(fk_inputs.DISCOVERED, lt.target.id, {})
    seen = []

    def on_event(kind, result, outcome):
        if kind == "case" and outcome is not None:
            detail = outcome.modes["interpret"].detail
            seen.append(detail.get("configs_used", {}).get("_copy"))

    opts = engine.CampaignOptions(budget=120.0, seed=0, max_examples=30, modes=("interpret",))
    pool = WorkerPool()
    try:
        result = engine.fuzz_target(lt, pool, opts, 120.0, on_event)
    finally:
        pool.close()
    assert result.failures == [] and result.error is None
    assert result.discovered == {"_copy": 3}
    assert seen[0] == 0  # the first case: no config drawn, the first pruned one ran
    assert set(seen[1:]) == {0, 1, 2}, seen  # then drawn, and forced as drawn


def test_a_corpus_entry_forces_the_discovered_kernels_config(tmp_path):
    from fuzzkern.corpus import store
    from fuzzkern.execution.runner import run_case

    lt = _loaded()
    (case,) = engine.draw_cases(lt.target, 1)
    case = dataclasses.replace(case, configs={"_copy": 2})
    outcome = run_case(lt.target, case, {"modes": ["interpret"]})
    assert outcome.verdict == "pass", outcome.message
    assert outcome.modes["interpret"].detail["configs_used"] == {"_copy": 2}  # as forced
    assert store.signature_problems(lt.target, case) == []  # not a kernel "no longer used"
    path = store.save(str(tmp_path), lt.target.id, lt.ref, case, outcome, modes=["interpret"],
                      target=lt.target)
    assert store.load(path).target["autotuners"] == [
        {"kernel": "_copy", "index": 2, "count": 3, "reached": "at run time"}]


def test_autotune_benchmark_draws_no_config_and_a_wrong_value_is_refused(monkeypatch):
    import pytest

    import fuzzkern
    from fuzzkern.errors import InvalidArgument

    lt = _loaded()
    monkeypatch.setitem(fk_inputs.DISCOVERED, lt.target.id, {"_copy": 3})
    drawn = engine.draw_cases(lt.target, 20)
    assert {c.configs.get("_copy") for c in drawn} == {0, 1, 2}
    bench = dataclasses.replace(lt.target, autotune="benchmark")
    assert all(c.configs == {} for c in engine.draw_cases(bench, 20))
    with pytest.raises(InvalidArgument, match="autotune to be one of"):
        fuzzkern.Target(launcher=lt.target.launcher, reference=lt.target.reference,
                        inputs=lt.target.inputs, dims=lt.target.dims, autotune="fast")


def test_a_kernel_found_by_a_failing_case_is_drawn_only_after_its_shrink(monkeypatch):
    """The shrinker replays the failing draw: it must draw as it did, with no config for the
    kernel it found, so the failure shrinks as found (not flaky) and is saved without one."""
    (lt,) = loader.load(f"{RUNTIME}::off_by_one")
    monkeypatch.setitem(fk_inputs.DISCOVERED, lt.target.id, {})
    opts = engine.CampaignOptions(budget=120.0, seed=0, max_examples=40, modes=("interpret",),
                                  max_failures=1, explain=False)
    pool = WorkerPool()
    try:
        result = engine.fuzz_target(lt, pool, opts, 120.0)
    finally:
        pool.close()
    (failure,) = result.failures
    assert failure.outcome.verdict == "kernel-bug" and not failure.flaky and failure.shrunk
    assert failure.case.configs == {} and failure.case.dims == {"N": 1}
    assert result.discovered == {"_copy": 3}  # for the next attempt or slice
    assert fk_inputs.DISCOVERED[lt.target.id] == {"_copy": 3}
