"""The target API of issue 43, point 8: a plain-int input drawn from a declared size
(``fks.dim``), tolerances that follow the inputs' dtype (``Tolerance(follow="inputs")``) and a
reference told the case's own dtypes (``input_dtypes``). Real worker, real interpreter."""

from __future__ import annotations

import os

import pytest

import fuzzkern
from fuzzkern.case.model import Case, Layout, TensorCase, Values
from fuzzkern.errors import InvalidArgument
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader

API = os.path.join(os.path.dirname(__file__), "..", "fixtures", "api_targets.py")
OPTIONS = {"modes": ["interpret"]}


def _targets():
    return {t.id.rsplit("::", 1)[-1]: t for t in loader.load(API)}


def test_a_plain_int_input_follows_its_dim_and_shrinks_with_it():
    lt = _targets()["chunked"]
    pool = WorkerPool()
    try:
        opts = engine.CampaignOptions(budget=60.0, modes=("interpret",), seed=1,
                                      max_examples=150, explain=False)
        result = engine.fuzz_target(lt, pool, opts, opts.budget)
    finally:
        pool.close()
    assert result.error is None and result.failures, result
    f = result.failures[0]
    # the input is the dim's value, in the drawn case and in the shrunk one: the smallest
    # chunk that shows the bug (5) over the smallest N that fills one
    assert f.case.scalars["chunk"] == f.case.dims["C"] == 5, f.case.describe()
    assert f.case.dims["N"] == 5, f.case.describe()


def test_a_dim_input_must_name_a_declared_dim():
    from fuzzkern import strategies as fks

    with pytest.raises(InvalidArgument, match="a dim named in the target's dims .* for input "
                                              "'g'"):
        t = fuzzkern.Target(launcher=lambda x, g: x, reference=lambda x, g: x,
                            inputs=fks.inputs(x=fks.tensors(("N",)), g=fks.dim("G")),
                            dims={"N": fks.sizes()})
        t.inputs.validate_against(t)


def _verdict(name: str) -> str:
    lt = _targets()[name]
    case = Case({"N": 16}, {"x": TensorCase.build((16,), "bfloat16", Layout.contiguous(1),
                                                  Values(seed=3, distribution="normal"))})
    pool = WorkerPool()
    try:
        return pool.run(lt.ref, case.to_json(), OPTIONS, 120).verdict
    finally:
        pool.close()


def test_a_tolerance_can_follow_the_inputs_dtype():
    # a float32 output at bfloat16 precision: wrong by float32's tolerance, right by bf16's
    assert _verdict("square_by_output") == "kernel-bug"
    assert _verdict("square_by_inputs") == "pass"
    with pytest.raises(InvalidArgument, match="follow='output' or follow='inputs'"):
        fuzzkern.Tolerance(follow="input")


def test_the_reference_can_ask_for_the_cases_own_dtypes():
    # the reference rounds to the input's own dtype as the kernel does: a pass; it asserts
    # what it was told (a wrong dtypes mapping would be a reference-error)
    assert _verdict("square_told") == "pass"
