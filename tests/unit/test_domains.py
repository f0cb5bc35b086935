"""Value domains, derived dims and clobbered inputs: what they draw, that cases stay data, and
that a failure found through each shrinks to a minimal case inside the domain."""

import json
import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.case.model import Case, Domain, Values, generate_values, materialize
from fuzzkern.errors import InvalidArgument
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader

HERE = os.path.dirname(__file__)
TARGETS = os.path.join(HERE, "targets", "domain_targets.py")
SOME = settings(database=None, max_examples=150, deadline=None)


def _target(inputs, dims, **kw):
    return fuzzkern.Target(launcher=lambda **k: None, reference=lambda **k: None,
                           inputs=inputs, dims=dims, **kw)


def _spec():
    return _target(
        fks.inputs(
            V2=st.integers(1, 9),
            p=fks.tensors(("N", "V"), dtypes=["float32", "float16", "bfloat16"],
                          values=fks.values(rows="probability")),
            lp=fks.tensors(("N", "V"), values=fks.values(rows="log_probability", dim=0)),
            y=fks.tensors(("N",), dtypes=["int64", "int32"],
                          values=fks.values(min_value=0, max_value="V", exclude_max=True,
                                            specials=["max", "min", -100])),
            z=fks.tensors(("C",), dtypes=["float16", "float32"],
                          values=fks.values(sign="positive")),
            w=fks.tensors(("C",), values=fks.values(min_value=-1, max_value=1, exclude_min=True)),
            q=fks.tensors(("D",), dtypes=["int32"], values=fks.values(max_value="V2")),
            n=fks.tensors(("D",), values=fks.values(sign="non-positive")),
        ),
        {"N": fks.sizes(max_value=8), "V": fks.sizes(max_value=10),
         "G": fks.sizes(max_value=10, multiple_of=2), "K": fks.sizes(max_value=3), "C": "G*K",
         "D": lambda G, C: G + C},
    )


@SOME
@given(_spec().cases())
def test_drawn_values_lie_in_their_domains_and_cases_stay_data(case):
    again = Case.from_json(json.loads(json.dumps(case.to_json())))
    assert again == case
    d = case.dims
    assert d["G"] % 2 == 0 and d["C"] == d["G"] * d["K"] and d["D"] == d["G"] + d["C"]
    t = {n: materialize(tc) for n, tc in case.tensors.items()}
    # a recipe is deterministic: built twice, bit for bit the same
    for n, tc in case.tensors.items():
        assert bytes(t[n].untyped_storage()) == bytes(materialize(tc).untyped_storage())
    p = t["p"].double()
    if p.numel():
        assert (p >= 0).all() and ((p.sum(-1) - 1).abs() < 2e-2).all()
    lp = t["lp"].double()
    if lp.numel():
        assert (lp <= 0).all() and ((lp.exp().sum(0) - 1).abs() < 2e-2).all()
    y = t["y"].long()
    assert (((y >= 0) & (y < d["V"])) | (y == -100)).all()
    assert (t["z"] > 0).all()
    assert ((t["w"] > -1) & (t["w"] <= 1)).all()
    assert (t["q"] <= case.inputs["V2"]).all()
    assert (t["n"] <= 0).all()


def test_specials_move_to_the_bounds_or_are_skipped():
    dom = Domain(min_value=0, max_value=5, exclude_max=True)
    v = generate_values(Values(0, "small_ints", ((0, "max"), (1, "min"), (2, "minus_one"),
                                                 (3, "=-100")), dom), (4,), torch.int64)
    assert v[0] == 4 and v[1] == 0 and 0 <= v[2] < 5 and v[3] == -100
    f = generate_values(Values(0, "normal", ((0, "max"), (1, "inf"), (2, "nan")),
                               Domain(min_value=-2.0, max_value=3.0)), (3,), torch.float32)
    assert f[0] == 3.0 and -2 <= f[1] <= 3 and f[2].isnan()  # nan only when the strategy drew it


def test_open_bounds_hold_after_rounding_to_the_dtype():
    dom = Domain(min_value=0.0, max_value=1e-3, exclude_min=True, exclude_max=True)
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for dist in ("small_ints", "normal", "wide", "large"):
            v = generate_values(Values(3, dist, (), dom), (500,), dtype).double()
            assert ((v > 0) & (v < 1e-3)).all(), (dtype, dist)


def test_a_range_draws_no_nan_or_inf_by_default():
    s = fks.values(min_value=0.0)
    s.check()
    kinds = s.for_dtype("float32")[1]
    assert "nan" not in kinds and "-inf" not in kinds and "-0.0" not in kinds
    assert "inf" in kinds and "max" in kinds


@pytest.mark.parametrize("kwargs, words", [
    ({"min_value": 2, "max_value": 1}, "non-empty range"),
    ({"exclude_min": True}, "exclude_min=False without a min_value"),
    ({"sign": "up"}, "one of positive"),
    ({"sign": "positive", "min_value": 1}, "Say the bound once"),
    ({"rows": "probability", "min_value": 0}, "rows set their own range"),
    ({"min_value": float("inf")}, "finite number"),
])
def test_bad_domains_are_rejected_with_the_fix(kwargs, words):
    with pytest.raises(InvalidArgument, match=words):
        fks.values(**kwargs).check()


def test_bound_naming_an_unknown_input_is_rejected():
    t = _target(fks.inputs(y=fks.tensors(("N",), dtypes=["int32"],
                                         values=fks.values(max_value="W"))),
                {"N": fks.sizes()})
    with pytest.raises(InvalidArgument, match="the name of a dim or an earlier scalar"):
        settings(database=None, max_examples=1)(given(t.cases())(lambda c: None))()


def test_integer_rows_and_bad_derived_dims_are_rejected():
    with pytest.raises(InvalidArgument, match="float dtype for rows"):
        fks.tensors(("N",), dtypes=["int32"], values=fks.values(rows="probability")).check()
    with pytest.raises(InvalidArgument, match="derived dim 'C'"):
        _target(fks.inputs(x=fks.tensors(("C",))), {"C": "G*2"})
    with pytest.raises(InvalidArgument, match="an expression of dim names"):
        _target(fks.inputs(x=fks.tensors(("C",))), {"G": fks.sizes(), "C": "G.real"})
    with pytest.raises(InvalidArgument, match="No multiple of 8"):
        fks.sizes(min_value=1, max_value=7, multiple_of=8).check()


def test_clobbers_must_name_a_tensor_not_also_inplace():
    spec = fks.inputs(x=fks.tensors(("N",)), a=st.just(1))
    with pytest.raises(InvalidArgument, match="clobbers to name tensor inputs"):
        _target(spec, {"N": fks.sizes()}, clobbers="a")
    with pytest.raises(InvalidArgument, match="not both"):
        _target(spec, {"N": fks.sizes()}, clobbers="x", inplace="x")


# -- through the engine: each domain's failure shrinks to a minimal case inside it ------------


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool()
    yield p
    p.close()


def _found(pool, name, budget=120.0, **kw):
    """A seeded run ended by its first failure (shrunk) or its case count, not by the clock:
    the budget is a generous cap for a loaded machine, and a fast machine's extra cases cannot
    add a second failure."""
    kw.setdefault("max_failures", 1)
    (lt,) = loader.load(f"{TARGETS}::{name}")
    opts = engine.CampaignOptions(budget=budget, seed=0, explain=False, **kw)
    result = engine.fuzz_target(lt, pool, opts, budget)
    assert result.error is None, result.error
    return result


def _one(result, verdict="kernel-bug"):
    assert [f.outcome.verdict for f in result.failures] == [verdict], result.counts
    f = result.failures[0]
    return f.case, {n: materialize(tc) for n, tc in f.case.tensors.items()}


def test_labels_below_a_dim_shrink_to_two_classes(pool):
    case, t = _one(_found(pool, "labels_below_dim"))
    assert case.dims == {"N": 1, "V": 2}
    assert t["labels"].tolist() == [1]  # the last class, and in [0, V)


def test_labels_below_a_scalar_shrink_to_the_first_wrong_id(pool):
    case, t = _one(_found(pool, "labels_below_scalar"))
    assert case.dims == {"N": 1}
    assert case.inputs["V"] == 4 and t["idx"].tolist() == [3]


def test_a_positive_domain_shrinks_inside_it(pool):
    case, t = _one(_found(pool, "positive"))
    assert case.dims == {"N": 1}
    assert 0 < float(t["x"][0]) < 0.5


def test_probability_rows_shrink_to_a_single_class(pool):
    case, t = _one(_found(pool, "entropy_rows"))
    assert case.dims == {"N": 1, "V": 1}
    assert t["p"].tolist() == [[1.0]]


def test_log_probability_rows_shrink_inside_the_domain(pool):
    case, t = _one(_found(pool, "log_rows"))
    assert case.dims["N"] == 1 and case.dims["V"] <= 8
    assert (t["logp"] <= 0).all() and float(t["logp"].exp().sum()) == pytest.approx(1, abs=1e-5)
    assert float(t["logp"][0, int(t["labels"][0])]) < -2


def test_multiple_of_shrinks_to_the_first_failing_multiple(pool):
    case, _ = _one(_found(pool, "even_dim"))
    assert case.dims == {"N": 1, "D": 6}


def test_derived_dim_shrinks_with_its_inputs(pool):
    case, t = _one(_found(pool, "groups"))
    assert case.dims == {"N": 1, "G": 1, "K": 2, "C": 2}
    assert t["w"].shape == (2,)


def test_clobbered_input_is_not_compared_nor_flagged(pool):
    result = _found(pool, "clobbered", max_examples=30)
    assert result.failures == [] and result.counts["pass"] > 10
    _one(_found(pool, "not_clobbered"), "input-mutated")
