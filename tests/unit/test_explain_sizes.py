"""What a failure depends on, in sizes (issue 43, point 6; fuzzkern/search/explain.py): a
missing mask "passes when N is a multiple of 16", a threshold "fails when N >= 21"; and every
saved failure is explained within its own time share, even when the budget ran out. Real
worker, real interpreter."""

from __future__ import annotations

import json
import os

from fuzzkern.case.model import Case, Layout, TensorCase
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.judge.outcome import Outcome
from fuzzkern.search import engine, explain
from fuzzkern.target import loader

SIZES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "size_bugs.py")
OPTIONS = {"modes": ["interpret"]}


def _explained(name: str, n: int) -> list[str]:
    lt = {t.id.rsplit("::", 1)[-1]: t for t in loader.load(SIZES)}[name]
    case = Case({"N": n}, {"x": TensorCase.build((n,), "float32", Layout.contiguous(1))})
    pool = WorkerPool()
    try:
        outcome = Outcome.from_json(pool.run(lt.ref, case.to_json(), OPTIONS, 120).to_json())
        assert outcome.failed, outcome.message
        return explain.explain(lt.ref, case, outcome, pool, OPTIONS, target=lt.target)
    finally:
        pool.close()


def test_a_missing_mask_passes_on_multiples_of_the_block():
    lines = _explained("unmasked", 21)
    assert "passes when N is a multiple of 16 (N=32 and N=48 pass; N=21 and N=33 fail)" in \
        lines, lines


def test_a_threshold_says_from_where_it_fails():
    lines = _explained("big", 21)
    assert "fails when N >= 21 (N=20 passes; N=22 and N=42 fail)" in lines, lines


def test_every_saved_failure_is_explained_even_past_the_budget(tmp_path):
    """A budget so short the search ends at once still gives the saved entry its
    explanations (the share is the failure's own), not "the budget ran out"."""
    lt = {t.id.rsplit("::", 1)[-1]: t for t in loader.load(SIZES)}["big"]
    pool = WorkerPool()
    try:
        opts = engine.CampaignOptions(budget=1.0, modes=("interpret",), seed=2,
                                      corpus=str(tmp_path / "corpus"), max_failures=1)
        result = None
        # the worker started first (no slice pays for importing torch and Triton), then 1 s
        # slices of new seeds until one draws N > 20: a loaded machine runs few cases in each,
        # so up to 30 slices (the first that finds it ends the loop)
        pool.warm([lt.ref], {"modes": opts.modes, "assume_gpu": None})
        for _ in range(30):
            result = engine.fuzz_target(lt, pool, opts, opts.budget)
            if result.failures:
                break
            opts.seed += 1
    finally:
        pool.close()
    assert result is not None and result.failures, result
    (f,) = [f for f in result.failures if not f.replayed]
    assert any(line.startswith("fails when N >= 21") for line in f.explanations), \
        f.explanations
    saved = json.loads(open(f.corpus_path).read())
    assert any(line.startswith("fails when N >= 21") for line in saved["explanations"])


def test_a_size_passes_only_when_other_values_pass_there_too():
    """The newcomer's column sum (issue 43's second trial): a loop that drops the last
    N % 8 elements read "passes when N is a multiple of 2", because the small integers of
    seed 0 sum to 0 at N=2 and N=4, as the kernel's empty loop does. A size passes only when a
    value variant of the case passes there too."""
    lines = _explained("dropped_tail", 1)
    assert not any("multiple of 2 " in line for line in lines), lines
    assert "passes when N is a multiple of 8 (N=8 and N=16 pass; N=1 and N=9 fail)" in \
        lines, lines
