"""Value variants (fuzzkern.case.model.Case.variant and fuzzkern.execution.runner.run_variants):
what the compiled mode runs after a case that had to compile, to spend that compilation on
several cases. Variants change input values only, so they must keep everything a Triton kernel
specializes on, be reproducible from (case, k) alone, and find value-dependent bugs."""

from __future__ import annotations

import os

import pytest
import torch

from fuzzkern.case.model import Case, Layout, TensorCase, Values, materialize
from fuzzkern.execution.pool import CaseClock
from fuzzkern.execution.runner import run_case, run_variants
from fuzzkern.judge.outcome import Verdict
from fuzzkern.search.engine import specialization_key
from fuzzkern.target import loader

HERE = os.path.dirname(__file__)
VALUE_BUG = os.path.join(HERE, "..", "fixtures", "value_bug.py")


def _case(n: int, seed: int, **scalars: object) -> Case:
    x = TensorCase.build((n,), "float32", Layout.contiguous(1),
                         Values(seed=seed, distribution="normal"))
    return Case({"N": n}, {"x": x, **scalars})


def test_a_variant_changes_value_seeds_and_nothing_else() -> None:
    c = _case(40, 7, scale=0.5, BLOCK=32)
    seen = set()
    drawn = set()
    for k in range(1, 200):
        v = c.variant(k)
        assert v == c.variant(k)  # a function of (case, k) alone
        assert v.dims == c.dims and v.configs == c.configs
        assert v.scalars == c.scalars
        x, vx = c.tensors["x"], v.tensors["x"]
        assert (vx.shape, vx.strides, vx.storage_offset, vx.storage_size, vx.dtype) == \
            (x.shape, x.strides, x.storage_offset, x.storage_size, x.dtype)
        assert (vx.values.distribution, vx.values.specials, vx.values.domain) == \
            (x.values.distribution, x.values.specials, x.values.domain)
        assert 1 <= vx.values.seed < 2**31
        assert specialization_key(v) == specialization_key(c)
        assert Case.from_json(v.to_json()) == v
        # 32 variants of a 40-element tensor draw their values together: a seed per block of
        # them, a member each
        assert vx.values.block == (32, (k - 1) % 32)
        seen.add((vx.values.seed, vx.values.block))
        drawn.add(materialize(vx).numpy().tobytes())
    assert len(seen) == 199 and len({s for s, _ in seen}) == 7 and 7 not in seen
    assert len(drawn) == 199  # every variant's values differ
    assert c.variant(0) is c


def test_a_variant_alone_draws_the_values_a_block_draws() -> None:
    """A variant's values are a member of its block's draw (drawn once for a batch of them,
    and kept): the same bytes whether the block was drawn before or not, and whatever the
    order of the members."""
    from fuzzkern.case import model
    from fuzzkern.execution.hygiene import as_bits

    c = _case(40, 7)
    model._block_of.cache_clear()
    alone = [as_bits(materialize(c.variant(k).tensors["x"])) for k in (33, 5, 64, 1)]
    model._block_of.cache_clear()
    drawn = {k: as_bits(materialize(c.variant(k).tensors["x"])) for k in range(1, 65)}
    assert all(torch.equal(a, drawn[k]) for a, k in zip(alone, (33, 5, 64, 1), strict=True))
    # a tensor too large for a block draws alone, with a seed per variant, as before blocks
    big = _case(1 << 17, 7)
    v = big.variant(3).tensors["x"]
    assert v.values.block is None and model.variant_block(1 << 17) == 1


def test_two_tensors_of_one_case_get_different_seeds() -> None:
    t = TensorCase.build((8,), "float32", Layout.contiguous(1), Values(seed=3))
    v = Case({}, {"a": t, "b": t}).variant(1)
    assert v.tensors["a"].values.seed != v.tensors["b"].values.seed


def test_variants_find_a_value_dependent_bug_and_the_failing_one_replays() -> None:
    (lt,) = loader.load(VALUE_BUG)
    target = lt.target
    options = {"modes": ["interpret"]}
    # a seed whose 16 normal values all stay below 2: the case itself passes
    case = next(c for c in (_case(16, s) for s in range(100))
                if run_case(target, c, options).verdict == Verdict.PASS)
    out = run_variants(target, case, options, seconds=120.0, most=500)
    assert "failed" in out, out
    k = out["failed"]["index"]
    assert out["ran"] == k - 1 and out["verdicts"] == ({"pass": k - 1} if k > 1 else {})
    assert out["failed"]["outcome"]["verdict"] == Verdict.KERNEL_BUG
    # the variant is an ordinary case: alone, it fails the same way; the ones before pass
    again = run_case(target, case.variant(k), options)
    assert again.verdict == Verdict.KERNEL_BUG
    assert all(run_case(target, case.variant(j), options).verdict == Verdict.PASS
               for j in range(1, k))


def test_variants_stop_when_their_time_is_spent() -> None:
    (lt,) = loader.load("fuzzkern.targets.builtin:vector_add")
    case = _add_case()
    out = run_variants(lt.target, case, {"modes": ["interpret"]}, seconds=0.0)
    assert out["ran"] == 0 and "failed" not in out
    out = run_variants(lt.target, case, {"modes": ["interpret"]}, seconds=60.0, most=3)
    assert out["ran"] == 3 and out["verdicts"] == {"pass": 3}


def _add_case() -> Case:
    x = TensorCase.build((5,), "float32", Layout.contiguous(1), Values(seed=1))
    y = TensorCase.build((5,), "float32", Layout.contiguous(1), Values(seed=2))
    return Case({"N": 5}, {"x": x, "y": y, "BLOCK": 64})


def test_the_clock_times_each_variant_as_a_case_of_its_own() -> None:
    clock = CaseClock(timeout=1.0, start=0.0)
    clock.event(["compile", True], 0.1)
    clock.event(["compile", False], 3.1)  # 3 s compiling, not counted
    assert clock.check(3.5) is None
    clock.event(["variant", 4], 3.9)  # the case took 0.8 s; variant 4 starts afresh
    assert clock.ran(4.5) == pytest.approx(0.6)
    assert clock.check(4.8) is None
    verdict, message, detail = clock.check(5.0)
    assert verdict == Verdict.HANG and detail["variant"] == 4
