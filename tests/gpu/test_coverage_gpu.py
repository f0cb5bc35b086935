"""Kernel coverage with the compiled mode (docs/coverage.md): compiled code has no line
coverage; a run in both modes carries the interpreter's coverage of the same cases.

Marked ``gpu``: skipped without CUDA. Run on the GPU machine with ``bench/gpu_suite.sh``."""

from __future__ import annotations

import pytest

from fuzzkern.execution.devices import worker_env
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.report import coverage as report
from fuzzkern.search import engine
from fuzzkern.target import loader

pytestmark = pytest.mark.gpu


def _fuzz(modes: tuple[str, ...]):
    (lt,) = loader.load("fuzzkern.targets.builtin:axpy")
    pool = WorkerPool(env=worker_env())
    try:
        opts = engine.CampaignOptions(budget=120, modes=modes, seed=0, database=None,
                                      max_examples=8, explain=False, amortize=0.0)
        return engine.fuzz_target(lt, pool, opts, 120)
    finally:
        pool.close()


def test_both_modes_carry_the_interpreters_coverage():
    r = _fuzz(("interpret", "compiled"))
    assert not r.failures and r.cases >= 8
    assert r.coverage.cases == r.cases  # every case ran in the interpreter too (no variants)
    reached, total = r.coverage.counts()["lines"]
    assert total == 11 and reached >= 8
    lines = report.coverage_lines([r], ("interpret", "compiled"))
    assert lines[0] == f"kernel coverage ({report.BOTH}):"
    assert lines[1].startswith("  builtin.axpy: ")


def test_compiled_alone_says_it_has_no_line_coverage():
    r = _fuzz(("compiled",))
    assert not r.failures and r.cases >= 8
    assert not r.coverage
    assert report.coverage_lines([r], ("compiled",)) == [report.COMPILED_ONLY]
    assert report.coverage_row(r)["note"].startswith("not measured: none of the")
    assert report.below([r], 1.0) == [("builtin.axpy", None)]
