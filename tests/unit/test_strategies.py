"""fuzzkern.strategies: what each strategy draws, how it shrinks, and how it rejects misuse."""

from __future__ import annotations

import doctest
import json
import math
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.case.model import Case, Layout, TensorCase, Values
from fuzzkern.errors import InvalidArgument
from fuzzkern.strategies._internal import inputs as inputs_module
from fuzzkern.strategies._internal.sizes import edge_sizes

NO_DB = settings(database=None, max_examples=2000, derandomize=True, deadline=None)
SOME = settings(
    database=None,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def minimal(strategy: st.SearchStrategy[Any], condition: Callable[[Any], bool] = lambda x: True):
    """The shrunk example of ``strategy`` satisfying ``condition`` (as Hypothesis's own tests)."""
    return find(strategy, condition, settings=NO_DB)


def target(inputs: Any, dims: dict[str, Any] | None = None, **kw: Any) -> fuzzkern.Target:
    def launcher(**kwargs: Any) -> None:
        return None

    return fuzzkern.Target(
        launcher=launcher, reference=launcher, inputs=inputs, dims=dims or {}, **kw
    )


# --------------------------------------------------------------------------------------------
# The facade


def test_import_does_not_import_torch_or_triton():
    code = (
        "import sys, fuzzkern.strategies; "
        "assert 'torch' not in sys.modules, 'torch'; assert 'triton' not in sys.modules, 'triton'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_all_is_sorted_and_public():
    assert fks.__all__ == sorted(fks.__all__)
    assert set(fks.__all__) == {"dim", "dtypes", "inputs", "layouts", "sizes", "tensors",
                                "values"}


def test_repr_names_only_non_defaults():
    assert repr(fks.tensors(("N",), dtype_of="a")) == "tensors(('N',), dtype_of='a')"
    assert repr(fks.sizes(max_value=64)) == "sizes(max_value=64)"
    assert repr(fks.layouts(2, expand=True)) == "layouts(2, expand=True)"


def test_docstring_examples_run():
    modules = [fks] + [
        __import__(f"fuzzkern.strategies._internal.{m}", fromlist=["_"])
        for m in ("base", "validation", "sizes", "dtypes", "layouts", "values", "tensors", "inputs")
    ]
    previous = settings.get_current_profile_name()
    settings.register_profile("fuzzkern-doctest", database=None, derandomize=True)
    settings.load_profile("fuzzkern-doctest")
    try:
        attempted = 0
        for module in modules:
            result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
            assert result.failed == 0, module.__name__
            attempted += result.attempted
        assert attempted >= 10
    finally:
        settings.load_profile(previous)


# --------------------------------------------------------------------------------------------
# sizes


@pytest.mark.parametrize("n", [1, 2, 3, 17, 31, 33, 127, 129, 255, 257, 1023, 1024])
def test_sizes_hit_edges(n):
    assert minimal(fks.sizes(), lambda k: k == n) == n


EDGES = {1, 2, 3, 17, 31, 33, 63, 65, 127, 129, 255, 257, 511, 513, 1023, 1024}


def test_sizes_favour_edges_over_plain_integers():
    def seen(strategy: st.SearchStrategy[int]) -> set[int]:
        out: set[int] = set()

        @settings(database=None, max_examples=300, derandomize=True)
        @given(strategy)
        def collect(n: int) -> None:
            out.add(n)

        collect()
        return out

    # Plain integers reach about 9 of these 16 edges in 300 draws; sizes() reaches them all.
    assert len(seen(fks.sizes()) & EDGES) >= 14
    assert len(seen(st.integers(1, 1024)) & EDGES) <= 12


def test_edge_list_has_tiles_and_powers_of_two_plus_minus_one():
    edges = set(edge_sizes(1, 1024))
    for k in range(1, 11):
        assert {2**k - 1, 2**k} <= edges
    for tile in (16, 32, 64, 128):
        for m in (1, 2, 3):
            assert {m * tile - 1, m * tile, m * tile + 1} - {1025} <= edges
    assert {13, 97, 131} <= edges
    assert edge_sizes(5, 5) == (5,)
    assert min(edge_sizes(40, 50)) == 40 and max(edge_sizes(40, 50)) == 50


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [(fks.sizes(), 1), (fks.sizes(min_value=0), 0), (fks.sizes(min_value=7, max_value=9), 7)],
)
def test_sizes_shrink_to_min_value(strategy, expected):
    assert minimal(strategy) == expected


def test_sizes_shrink_through_plain_integers():
    assert minimal(fks.sizes(max_value=4096), lambda n: n > 1000) == 1001


@SOME
@given(fks.sizes(min_value=3, max_value=40))
def test_sizes_stay_in_range(n):
    assert 3 <= n <= 40


# --------------------------------------------------------------------------------------------
# dtypes


def test_dtypes_shrink_to_most_boring_given():
    assert minimal(fks.dtypes()) == "float32"
    assert minimal(fks.dtypes(["bfloat16", "float16"])) == "float16"
    assert minimal(fks.dtypes(["int8", "int32"])) == "int32"


def test_dtypes_reach_every_name():
    assert minimal(fks.dtypes(), lambda d: d == "bfloat16") == "bfloat16"


# --------------------------------------------------------------------------------------------
# layouts


def test_layouts_shrink_to_contiguous():
    assert minimal(fks.layouts(3)) == Layout.contiguous(3)


def test_layouts_shrink_each_part_alone():
    assert minimal(fks.layouts(2), lambda la: la.steps[1] > 1) == Layout(
        (0, 1), (1, 2), (0, 0), 0, ()
    )
    assert minimal(fks.layouts(2), lambda la: la.offset > 0) == Layout(
        (0, 1), (1, 1), (0, 0), 1, ()
    )
    assert minimal(fks.layouts(2), lambda la: la.starts[0] > 0) == Layout(
        (0, 1), (1, 1), (1, 0), 0, ()
    )
    assert minimal(fks.layouts(2), lambda la: la.permutation != (0, 1)) == Layout(
        (1, 0), (1, 1), (0, 0), 0, ()
    )
    assert minimal(fks.layouts(2, expand=True), lambda la: bool(la.expanded)) == Layout(
        (0, 1), (1, 1), (0, 0), 0, (1,)
    )


def test_layouts_reach_misaligned_offsets_and_respect_bounds():
    assert minimal(fks.layouts(1), lambda la: la.offset == 9).offset == 9
    assert minimal(fks.layouts(1), lambda la: la.offset % 2 == 1).offset == 1


@SOME
@given(fks.layouts(3, permute=False, max_step=2, max_start=1, max_offset=3))
def test_layouts_respect_options(layout):
    assert layout.permutation == (0, 1, 2)
    assert all(1 <= s <= 2 for s in layout.steps)
    assert all(0 <= s <= 1 for s in layout.starts)
    assert 0 <= layout.offset <= 3
    assert layout.expanded == ()


# --------------------------------------------------------------------------------------------
# values


def test_values_shrink_to_boring():
    assert minimal(fks.values("float16")) == Values(0, "small_ints", ())
    assert minimal(fks.values()) == Values(0, "small_ints", ())


def test_values_shrink_each_part_alone():
    assert minimal(fks.values("float32"), lambda v: v.seed > 0) == Values(1, "small_ints", ())
    assert minimal(fks.values("float32"), lambda v: v.distribution == "wide") == Values(
        0, "wide", ()
    )
    assert minimal(
        fks.values("float32"), lambda v: any(k == "inf" for _, k in v.specials)
    ) == Values(0, "small_ints", ((0, "inf"),))
    two = minimal(fks.values("float32"), lambda v: len(v.specials) >= 2)
    assert two == Values(0, "small_ints", ((0, "nan"), (0, "nan")))


def test_values_fit_the_dtype():
    ints = fks.values("int32")
    assert minimal(ints, lambda v: v.distribution == "extreme").distribution == "extreme"
    assert minimal(ints, lambda v: bool(v.specials)).specials == ((0, "max"),)


@pytest.mark.parametrize("dtype, wanted", [
    ("float32", ("normal", "wide", "large")),   # not only those every dtype shares
    ("bfloat16", ("normal", "wide", "large")),
    ("int16", ("extreme",)),
])
def test_tensors_default_values_reach_every_distribution_of_their_dtype(dtype, wanted):
    # The recipe of tensors(values=None) is made without a dtype and bound to the dtype drawn:
    # it must offer that dtype's whole list, not the names every dtype shares.
    for name in wanted:
        t = minimal(fks.tensors(("N",), dtypes=[dtype]),
                    lambda t, name=name: t.values.distribution == name)
        assert t.values.distribution == name and t.dtype == dtype


@SOME
@given(fks.values(), fks.values("int8", specials=["min"], max_specials=1))
def test_values_without_dtype_fit_any_dtype(any_dtype, int8):
    assert any_dtype.distribution in ("small_ints", "uniform", "negative")
    assert all(kind == "max" for _, kind in any_dtype.specials)
    assert all(kind == "min" for _, kind in int8.specials) and len(int8.specials) <= 1


def test_values_specials_can_be_turned_off():
    with pytest.raises(NoSuchExample):
        find(fks.values("float32", specials=False), lambda v: v.specials, settings=NO_DB)
    with pytest.raises(NoSuchExample):
        find(fks.values("float32", max_specials=0), lambda v: v.specials, settings=NO_DB)


# --------------------------------------------------------------------------------------------
# tensors


def test_tensors_shrink_to_boring():
    t = minimal(fks.tensors(("N",)))
    assert t == TensorCase.build((1,), "float32", Layout.contiguous(1), Values())
    assert t.is_contiguous and t.values == Values(0, "small_ints", ())


def test_tensors_shrink_layout_alone():
    t = minimal(fks.tensors(("M", "N")), lambda t: not t.is_contiguous)
    assert len(t.layout.kinds()) == 1
    assert (t.shape, t.dtype, t.values) == ((1, 1), "float32", Values())


def test_tensors_same_name_same_size():
    t = minimal(fks.tensors(("N", "N", 3)), lambda t: t.shape[0] > 4)
    assert t.shape == (5, 5, 3)


def test_tensor_without_layout_is_contiguous():
    with pytest.raises(NoSuchExample):
        find(fks.tensors(("N", 2), layout=False), lambda t: not t.is_contiguous, settings=NO_DB)


def test_tensors_bind_values_to_their_dtype():
    recipe = fks.values(distributions=["uniform", "normal"], specials=["nan", "min"])
    both = fks.tensors((2,), dtypes=["int32", "float32"], values=recipe)
    t = minimal(both, lambda t: bool(t.values.specials))
    assert (t.dtype, t.values) == ("float32", Values(0, "normal", ((0, "nan"),)))
    t = minimal(both, lambda t: t.dtype == "int32" and bool(t.values.specials))
    assert t.values == Values(0, "uniform", ((0, "min"),))


def test_tensors_take_a_layout_strategy_and_values_strategy():
    t = minimal(
        fks.tensors((4, 4), layout=fks.layouts(2, permute=False), values=st.just(Values(7))),
        lambda t: t.layout.steps[0] > 1,
    )
    assert t.layout.permutation == (0, 1) and t.values == Values(7)


@SOME
@given(fks.tensors(("M", "N"), max_numel=50))
def test_max_numel_is_derived_not_filtered(t):
    assert t.numel <= 50


def test_max_numel_reaches_its_bound():
    assert minimal(fks.tensors(("N", "N"), max_numel=50), lambda t: t.numel > 40).shape == (7, 7)


@SOME
@given(
    fks.tensors(
        ("M", "N"),
        dtypes=["float32", "float16", "bfloat16", "int32", "int8", "uint8", "bool"],
        expand=True,
    )
)
def test_materialize_has_the_drawn_layout_and_poisoned_gaps(tc):
    import torch

    from fuzzkern.case.model import gap_fill, materialize

    t = materialize(tc)
    assert tuple(t.shape) == tc.shape
    assert t.stride() == tc.strides
    assert t.storage_offset() == tc.storage_offset
    assert t.untyped_storage().nbytes() == tc.storage_size * t.element_size()
    covered = torch.zeros(tc.storage_size, dtype=torch.bool)
    if tc.numel:
        index = torch.arange(tc.storage_size).as_strided(tc.shape, tc.strides, tc.storage_offset)
        covered[index.flatten()] = True
    flat = t.as_strided((tc.storage_size,), (1,), 0)
    gaps = flat[~covered]
    fill = gap_fill(t.dtype)
    if t.dtype.is_floating_point:
        assert bool(gaps.isnan().all())
        specials = {kind for _, kind in tc.values.specials}
        if tc.numel and "nan" not in specials:
            assert not bool(flat[covered].isnan().any())
    else:
        assert bool((gaps == fill).all())


@SOME
@given(fks.tensors(("M", "N"), dtypes=["float32", "float16", "bfloat16", "float8_e4m3fn",
                                      "int32", "int8", "uint8", "bool"]))
def test_dense_tensors_materialize_as_if_they_had_gaps(tc):
    """A dense row-major tensor's generated values are its storage (a fast path that skips the
    gap fill and copy): the same bytes as the general path gives the same recipe in a storage
    one element longer, whose view is the same elements."""
    import dataclasses

    import torch

    from fuzzkern.case.model import contiguous_strides, materialize
    from fuzzkern.execution.hygiene import as_bits

    dense = dataclasses.replace(tc, strides=contiguous_strides(tc.shape), storage_offset=0,
                                storage_size=tc.numel)
    longer = dataclasses.replace(dense, storage_size=dense.numel + 1)
    fast, general = materialize(dense), materialize(longer)
    assert fast.stride() == dense.strides and fast.storage_offset() == 0
    assert fast.untyped_storage().nbytes() == dense.numel * fast.element_size()
    assert fast.dtype == general.dtype and fast.shape == general.shape
    assert torch.equal(as_bits(fast), as_bits(general))


def test_expanded_tensor_materializes_with_stride_zero():
    import torch  # noqa: F401  (materialize needs it)

    from fuzzkern.case.model import materialize

    tc = minimal(fks.tensors((3, 4), expand=True), lambda t: bool(t.layout.expanded))
    assert tc.strides == (1, 0)
    t = materialize(tc)
    assert t.stride() == (1, 0) and bool((t == t[:, :1]).all())


def test_an_empty_tensor_with_an_expanded_dim_materializes():
    # an expanded dim counts as one element when the values are written: not when another
    # dim is 0 (it raised: "setStorage ... out of bounds for storage of size 0")
    from fuzzkern.case.model import TensorCase, Values, materialize

    t = materialize(TensorCase((0, 5), "float32", (0, 1), 0, 0, Values(seed=1)))
    assert t.shape == (0, 5) and t.stride() == (0, 1) and t.untyped_storage().nbytes() == 0


# --------------------------------------------------------------------------------------------
# inputs and cases


MATMUL = fks.inputs(
    a=fks.tensors(("M", "K")),
    b=fks.tensors(("K", "N"), dtype_of="a"),
    c=fks.tensors(("M", "N"), dtypes=["float32"]),
    alpha=st.floats(allow_nan=True, allow_infinity=True),
    BLOCK=st.sampled_from([64, 128]),
    flags=st.tuples(st.booleans(), st.none(), st.text(max_size=3)),
)


@SOME
@given(MATMUL)
def test_dims_are_shared_within_a_case(case):
    a, b, c = case.inputs["a"], case.inputs["b"], case.inputs["c"]
    assert a.shape == (case.dims["M"], case.dims["K"])
    assert b.shape == (case.dims["K"], case.dims["N"])
    assert c.shape == (case.dims["M"], case.dims["N"])
    assert b.dtype == a.dtype
    assert list(case.inputs) == ["a", "b", "c", "alpha", "BLOCK", "flags"]


@SOME
@given(MATMUL)
def test_cases_survive_a_json_round_trip(case):
    assert Case.from_json(json.loads(json.dumps(case.to_json()))) == case


def test_nan_scalars_round_trip_equal():
    # st.floats() draws NaN in about 1% of cases: ask for it, rather than hunt for it
    nan_alpha = fks.inputs(a=fks.tensors(("M", "K")), alpha=st.just(math.nan), BLOCK=st.just(64))
    case = minimal(nan_alpha)
    assert case.inputs["alpha"] is math.nan
    assert Case.from_json(json.loads(json.dumps(case.to_json()))) == case


def test_dtype_of_follows_every_dtype():
    case = minimal(MATMUL, lambda c: c.inputs["a"].dtype == "bfloat16")
    assert case.inputs["b"].dtype == "bfloat16" and case.inputs["c"].dtype == "float32"


def test_standalone_inputs_shrink_to_boring_case():
    case = minimal(MATMUL)
    assert case.dims == {"M": 1, "K": 1, "N": 1}
    assert case.scalars == {"alpha": 0.0, "BLOCK": 64, "flags": (False, None, "")}
    assert all(t == TensorCase.build(t.shape, "float32") for t in case.tensors.values())
    assert case.configs == {}


def test_target_cases_draw_dims_from_the_target():
    t = target(
        fks.inputs(x=fks.tensors(("N",)), y=fks.tensors(("N",), dtype_of="x")),
        dims={"N": fks.sizes(min_value=5, max_value=9), "R": st.just(3)},
        reduction="R",
    )
    case = minimal(t.cases(), lambda c: c.dims["N"] > 5)
    assert case.dims == {"N": 6, "R": 3}
    assert case.inputs["x"].shape == case.inputs["y"].shape == (6,)


@SOME
@given(st.data())
def test_target_max_numel_bounds_target_dims(data):
    t = target(
        fks.inputs(a=fks.tensors(("M", "K"), max_numel=256), b=fks.tensors(("K",))),
        dims={"M": fks.sizes(max_value=4096), "K": fks.sizes(max_value=4096)},
    )
    case = data.draw(t.cases())
    assert case.inputs["a"].numel <= 256


def test_configs_are_drawn_per_autotuned_kernel(monkeypatch):
    monkeypatch.setattr(inputs_module, "autotune_counts", lambda launcher: {"mm": 4, "one": 1})
    t = target(fks.inputs(x=fks.tensors(("N",))), dims={"N": fks.sizes()})
    assert minimal(t.cases()).configs == {"mm": 0, "one": 0}
    assert minimal(t.cases(), lambda c: c.configs["mm"] == 3).configs == {"mm": 3, "one": 0}


def test_autotune_counts_of_a_plain_launcher_is_empty():
    assert inputs_module.autotune_counts(lambda x: x) == {}


@SOME
@given(st.data())
def test_inplace_tensors_are_never_expanded(data):
    t = target(
        fks.inputs(x=fks.tensors(("N", "N")), y=fks.tensors(("N", "N"), expand=True)),
        dims={"N": fks.sizes(max_value=4)},
        inplace="x",
    )
    case = data.draw(t.cases())
    assert case.inputs["x"].layout.expanded == ()


def test_inplace_with_expanding_layout_strategy_is_rejected_at_draw():
    t = target(
        fks.inputs(x=fks.tensors(("N",), layout=st.just(Layout((0,), (1,), (0,), 0, (0,))))),
        dims={"N": fks.sizes()},
        inplace="x",
    )
    with pytest.raises(InvalidArgument, match="in place"):
        minimal(t.cases())


# --------------------------------------------------------------------------------------------
# Argument validation: each bad call raises InvalidArgument at the first draw, not before


def e(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    return (fn, args, kwargs)


BAD = [
    (e(fks.sizes, min_value=-1), "min_value=-1 (type=int)"),
    (e(fks.sizes, min_value=5, max_value=2), "max_value=2 (type=int)"),
    (e(fks.sizes, max_value=1.5), "max_value=1.5 (type=float)"),
    (e(fks.sizes, min_value=True), "min_value=True (type=bool)"),
    (e(fks.dtypes, ["float33"]), "names[0]='float33'"),
    (e(fks.dtypes, "float32"), "names=['float32']"),
    (e(fks.dtypes, []), "names=[] (type=list)"),
    (e(fks.layouts, -1), "ndim=-1"),
    (e(fks.layouts, 2.0), "ndim=2.0 (type=float)"),
    (e(fks.layouts, 2, max_step=0), "max_step=0"),
    (e(fks.layouts, 2, max_start=-1), "max_start=-1"),
    (e(fks.layouts, 2, max_offset=1.0), "max_offset=1.0"),
    (e(fks.layouts, 2, permute=1), "permute=1 (type=int)"),
    (e(fks.layouts, 2, expand="yes"), "expand='yes'"),
    (e(fks.values, "float99"), "dtype='float99'"),
    (e(fks.values, distributions=["gaussian"]), "distributions[0]='gaussian'"),
    (e(fks.values, distributions="normal"), "distributions=['normal']"),
    (e(fks.values, "int32", distributions=["normal"]), "distributions[0]='normal'"),
    (e(fks.values, distributions=["normal"]), "applies to every dtype"),
    (e(fks.values, "int32", specials=["nan"]), "specials[0]='nan'"),
    (e(fks.values, max_specials=-1), "max_specials=-1"),
    (e(fks.values, max_seed=2**64), "max_seed="),
    (e(fks.tensors, "N"), "shape=('N',)"),
    (e(fks.tensors, 5), "shape=(5,)"),
    (e(fks.tensors, ("N", -1)), "shape[1]=-1"),
    (e(fks.tensors, ("N", 1.5)), "shape[1]=1.5"),
    (e(fks.tensors, ("",)), "shape[0]=''"),
    (e(fks.tensors, ("N",), dtypes=["float99"]), "dtypes[0]='float99'"),
    (e(fks.tensors, ("N",), dtypes=["float16"], dtype_of="a"), "dtypes=['float16']"),
    (e(fks.tensors, ("N",), dtype_of=3), "dtype_of=3"),
    (e(fks.tensors, ("N",), layout=False, expand=True), "expand=True"),
    (e(fks.tensors, ("N",), layout=fks.layouts(2)), "fks.layouts(1)"),
    (e(fks.tensors, ("N",), layout="strided"), "layout='strided'"),
    (e(fks.tensors, ("N",), values=Values()), "values=Values("),
    (e(fks.tensors, ("N",), values=fks.values(max_seed=-1)), "max_seed=-1"),
    (
        e(fks.tensors, ("N",), dtypes=["int32"], values=fks.values(distributions=["normal"])),
        "applies to dtype int32",
    ),
    (e(fks.tensors, (4, 4), max_numel=10), "max_numel=10"),
    (e(fks.tensors, ("N",), max_numel=-1), "max_numel=-1"),
    (e(fks.inputs, a=1.5), "a=1.5 (type=float). Wrap a constant in st.just"),
    (e(fks.inputs, a=fks.tensors("N")), "In input 'a': Expected"),
    (e(fks.inputs, a=fks.tensors(("N",)), b=fks.tensors(("N",), dtype_of="c")), "dtype_of='c'"),
    (e(fks.inputs, s=st.just(1), b=fks.tensors(("N",), dtype_of="s")), "not a scalar"),
    (e(fks.inputs, b=fks.tensors(("N",), dtype_of="a"), a=fks.tensors(("N",))), "before 'b'"),
    (e(fks.inputs, a=fks.tensors(("N",), dtype_of="a")), "dtype_of='a'"),
]


@pytest.mark.parametrize(("call", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_arguments_raise_at_first_draw(call, message):
    fn, args, kwargs = call
    strategy = fn(*args, **kwargs)  # lazy: building never raises
    with pytest.raises(InvalidArgument) as info:
        find(strategy, lambda x: True, settings=NO_DB)
    text = str(info.value)
    assert "Expected " in text and " but got " in text, text
    assert message in text, text


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        (fks.tensors(("N",), dtype_of="a"), "inside fks.inputs"),
        (fks.inputs(x=st.just(object())), "Expected input 'x' to draw a JSON-representable"),
        (fks.inputs(x=st.just([1j])), "(type=list)"),
        (fks.tensors(("N",), layout=st.just("dense")), "strategy of fuzzkern.case.model.Layout"),
        (fks.tensors(("N",), values=st.just(Values(0, "gauss"))), "distribution='gauss'"),
        (fks.tensors(("N",), dtypes=["int8"], values=st.just(Values(0, "normal"))), "for int8"),
    ],
)
def test_bad_draws_raise(strategy, message):
    with pytest.raises(InvalidArgument, match="Expected") as info:
        find(strategy, lambda x: True, settings=NO_DB)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(inputs=fks.inputs(a=fks.tensors(("N", "K")))), "dim='K'"),
        (dict(inputs=fks.inputs(a=fks.tensors(("N",))), dims={"N": 64}), "st.just"),
        (dict(inputs=fks.inputs(a=fks.tensors(("N",))), inplace="z"), "inplace='z'"),
        (
            dict(inputs=fks.inputs(a=fks.tensors(("N",)), s=st.just(1.0)), inplace="s"),
            "tensor input",
        ),
        (dict(inputs=fks.inputs(a=fks.tensors(("N",), expand=True)), inplace="a"), "expand"),
        (
            dict(
                inputs=fks.inputs(a=fks.tensors(("N", "N"), max_numel=3)),
                dims={"N": fks.sizes(min_value=2)},
            ),
            "max_numel=3",
        ),
    ],
)
def test_inputs_are_validated_against_the_target(kwargs, message):
    kwargs.setdefault("dims", {"N": fks.sizes()})
    with pytest.raises(InvalidArgument, match="Expected") as info:
        target(**kwargs)
    assert message in str(info.value)
