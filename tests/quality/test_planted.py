"""Quality: planted bugs are found and shrunk to their known minimal case; the correct twins
are never reported.

Each module in ``tests/quality/kernels`` plants one real bug class and states the minimal case
the shrinker must reach (``MINIMAL_DIMS`` plus the layout facts asserted below) and the
verdict (``EXPECTED_VERDICT``). Runs go through the real engine: Hypothesis, forked workers,
the interpreter with its bounds checker, the oracle.
"""

import importlib
import os

import pytest

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader

pytestmark = pytest.mark.slow

HERE = os.path.dirname(__file__)


def _contiguous(case, name):
    t = case.tensors[name]
    return t.is_contiguous


def _stepped(case, name):
    t = case.tensors[name]
    return t.layout is not None and t.layout.kinds() == ["strided"]


def _transposed(case, name):
    t = case.tensors[name]
    return t.layout is not None and t.layout.kinds() == ["permuted"]


def _expanded_last(case, name):
    t = case.tensors[name]
    return t.strides[-1] == 0 and t.layout.kinds() == ["expanded"]


def _all_contiguous(case):
    return all(t.is_contiguous for t in case.tensors.values())


# module -> what the shrunk case's layouts must look like (besides MINIMAL_DIMS)
LAYOUT = {
    "missing_mask": _all_contiguous,
    "oob_store": _all_contiguous,
    "floor_grid": _all_contiguous,
    "unmasked_k": _all_contiguous,
    "reduction_padding": _all_contiguous,
    "persistent_tiles": _all_contiguous,
    "autotune_config": _all_contiguous,
    "hang": _all_contiguous,
    "ignored_stride": lambda c: _stepped(c, "x") and _contiguous(c, "y"),
    "inplace_copy": lambda c: _stepped(c, "x") and _contiguous(c, "y"),
    "empty_like_flat": lambda c: _transposed(c, "x"),
    "expanded_fastpath": lambda c: _contiguous(c, "x") and _expanded_last(c, "bias"),
    "scratch_input": _all_contiguous,
    "int32_index": _all_contiguous,
}

MODULES = sorted(LAYOUT)

# the most boring dtype each planted kernel accepts (float32 unless it only takes float16)
DTYPE = {"persistent_tiles": "float16", "reduction_padding": "float16", "unmasked_k": "float16"}


def _fuzz(module, name, budget=300.0, **kw):
    """A seeded run ended by its first failure (``max_failures=1``) or its case count, not by
    the clock: the budget is a generous cap for a loaded machine (it also sets the shrink's
    grace period, so a slow machine still shrinks to the minimal case)."""
    path = os.path.join(HERE, "kernels", f"{module}.py")
    (lt,) = loader.load(f"{path}::{name}")
    spec = importlib.import_module(f"tests.quality.kernels.{module}")
    kw.setdefault("debug", getattr(spec, "DEBUG", False))
    # one planted bug per kernel: its first failure ends the run (tests/unit/test_many_failures
    # covers going on after a failure)
    kw.setdefault("max_failures", 1)
    pool = WorkerPool()
    try:
        opts = engine.CampaignOptions(budget=budget, seed=0, database=None, **kw)
        return engine.fuzz_target(lt, pool, opts, budget)
    finally:
        pool.close()


@pytest.mark.parametrize("module", MODULES)
def test_planted_bug_is_found_and_shrunk(module):
    spec = importlib.import_module(f"tests.quality.kernels.{module}")
    result = _fuzz(module, "buggy")
    assert result.error is None, result.error
    verdicts = [f.outcome.verdict for f in result.failures]
    assert verdicts == [spec.EXPECTED_VERDICT], [f.outcome.message for f in result.failures]
    failure = result.failures[0]
    assert failure.shrunk
    case = failure.case
    assert dict(case.dims) == spec.MINIMAL_DIMS, case.describe()
    assert LAYOUT[module](case), case.describe()
    assert {t.dtype for t in case.tensors.values()} == {DTYPE.get(module, "float32")}, (
        case.describe())
    # the boring values: seed 0, small integers, no special values
    for t in case.tensors.values():
        assert (t.values.seed, t.values.distribution, t.values.specials) == (
            0, "small_ints", ()), case.describe()
    for name in ("BLOCK", "stride"):  # the smallest meta-parameters that still fail
        if name in case.scalars:
            expected = getattr(spec, f"MINIMAL_{name.upper()}", 16 if name == "BLOCK" else None)
            assert case.scalars[name] == expected, case.describe()


@pytest.mark.parametrize("module", MODULES)
def test_correct_twin_is_never_reported(module):
    result = _fuzz(module, "correct", max_examples=60)
    assert result.error is None, result.error
    assert result.failures == [], [f.outcome.message for f in result.failures]
    assert result.counts["pass"] >= 20


def test_oob_report_names_the_location():
    result = _fuzz("oob_store", "buggy")
    (failure,) = result.failures
    mode = failure.outcome.modes["interpret"]
    oob = mode.detail["oob"]
    assert oob["op"] == "store"
    assert oob["argument"] == "out_ptr" or oob["argument"].startswith("out")
    assert oob["distance_elements"] == 1
    assert oob["program_id"] == [0, 0, 0]
    assert "past the end" in mode.error
    # the run went on after the oob: the shrinker ran more cases that passed or failed
    assert result.cases > 1


def test_view_report_names_the_gap():
    result = _fuzz("ignored_stride", "buggy")
    (failure,) = result.failures
    mode = failure.outcome.modes["interpret"]
    oob = mode.detail["oob"]
    assert (oob["op"], oob["argument"], oob["region"]) == ("load", "x", "gap")
    assert oob["storage_index"] == 1  # x[1] lives at storage element 2; element 1 is a gap
    assert oob["program_id"] == [0, 0, 0] and oob["lane"] == 1
    assert "is not part of the view passed to the kernel" in mode.error
    assert oob["location"].startswith("ignored_stride.py:") and "tl.load(x_ptr" in oob["location"]


def test_view_checks_off_gives_the_value_verdict():
    result = _fuzz("ignored_stride", "buggy", checks={"view": False})
    assert [f.outcome.verdict for f in result.failures] == ["kernel-bug"]


def test_unwritten_report_counts_the_never_written_elements():
    result = _fuzz("floor_grid", "buggy")
    (failure,) = result.failures
    mode = failure.outcome.modes["interpret"]
    assert mode.detail["unwritten_only"] is True
    assert mode.detail["unwritten"] == {0: 1}
    assert "never written" in failure.outcome.message


def test_mutated_input_report_names_the_argument_and_elements():
    result = _fuzz("scratch_input", "buggy")
    (failure,) = result.failures
    (mutated,) = failure.outcome.modes["interpret"].detail["mutated"]
    assert mutated["argument"] == "x" and mutated["count"] == 1
    assert mutated["first"] == [{"index": [0], "before": 4.0, "after": 8.0}]
    assert "inplace='x'" in failure.outcome.message
    # the output itself was right: only the hygiene check could see this bug
    assert failure.outcome.modes["interpret"].status == "ok"


def test_overflow_report_names_the_operation():
    result = _fuzz("int32_index", "buggy")
    (failure,) = result.failures
    mode = failure.outcome.modes["interpret"]
    overflow = mode.detail["overflow"]
    assert (overflow["dtype"], overflow["operation"], overflow["program_id"]) == (
        "int32", "mul", [0, 0, 0])
    assert overflow["location"].startswith("int32_index.py:")  # the kernel's line
    assert "(offs * stride)" in overflow["location"]
    assert "int32 overflow in mul" in failure.outcome.message
