"""The oracle's fast path (numpy: every element finite, non-finite the same way on both sides,
or an overflow of a reference beyond the range) against its general path (torch): the same
verdicts and figures, bit for bit, on every float dtype, near the formats' edges."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzkern.judge import oracle

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]
DTYPES += [d for d in (getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None))
           if d is not None]


def _edge_values(dtype: torch.dtype) -> list[float]:
    f = oracle.float_format(dtype)
    tiny = 2.0 ** f.emin
    sub = 2.0 ** (f.emin - f.mantissa)
    return [0.0, -0.0, sub, -sub, sub * 1.5, tiny, tiny * (1 - 2.0**-20), f.max, -f.max,
            f.max * (1 + 2.0**-(f.mantissa + 1)), f.max * 1.5, 1.0, 1.0 + 2.0**-(f.mantissa + 1),
            2.0 - 2.0**-(f.mantissa + 2), 3.0, 1e-3, 123.456, math.inf, -math.inf, math.nan]


@st.composite
def pairs(draw):
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(0, 12))
    edges = _edge_values(dtype)
    ref = draw(st.lists(st.one_of(st.sampled_from(edges),
                                  st.floats(-1e6, 1e6, allow_nan=False, width=64)),
                        min_size=n, max_size=n))
    x = torch.tensor(ref, dtype=torch.float64)
    # outputs: the reference in the output dtype, nudged, sometimes replaced by an edge value
    out = x.to(torch.float64).clone()
    for i in range(n):
        kind = draw(st.integers(0, 3))
        if kind == 1:
            out[i] = out[i] * (1 + draw(st.floats(-1e-2, 1e-2)))
        elif kind == 2:
            out[i] = draw(st.sampled_from(edges))
    out = oracle.round_to(out, dtype).to(dtype) if n else out.to(dtype)
    rtol = draw(st.sampled_from([0.0, 1e-6, 1e-3, 0.25]))
    atol = draw(st.sampled_from([0.0, 1e-9, 1e-5]))
    mag = x.abs() * draw(st.sampled_from([0.0, 1.0, 10.0])) if draw(st.booleans()) else None
    extra = torch.full_like(x, draw(st.sampled_from([0.0, 1e-4, 1.0]))) \
        if draw(st.booleans()) else None
    equal_nan = draw(st.booleans())
    return out, x, mag, rtol, atol, draw(st.integers(1, 4096)), equal_nan, extra


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck),
          database=None)
@given(pairs())
def test_fast_path_matches_general_path(args):
    out, x, mag, rtol, atol, r, equal_nan, extra = args
    general = oracle._check_float_general(out, x, mag, rtol, atol, r, equal_nan, extra)
    fast = oracle._check_float(out, x, mag, rtol, atol, r, equal_nan, extra)
    assert torch.equal(fast.mismatch, general.mismatch)
    assert torch.equal(fast.nonfinite, general.nonfinite)
    for a, b in ((fast.abs_err, general.abs_err), (fast.rel_err, general.rel_err),
                 (fast.ulp_err, general.ulp_err)):
        assert _same(a, b), (a, b)
    assert torch.equal(fast.got, general.got) or torch.allclose(
        fast.got, general.got, equal_nan=True, rtol=0, atol=0)
    assert fast.ratio is not None and general.ratio is not None
    assert torch.allclose(fast.ratio, general.ratio, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fast_path_is_taken_when_everything_is_finite(dtype):
    x = torch.tensor([0.0, 1.0, -2.5, 1e-3], dtype=torch.float64)
    out = oracle.round_to(x, dtype).to(dtype)
    assert oracle._check_float_fast(out, x, None, 1e-3, 1e-5, 1, None) is not None
    # a NaN or an infinity on one side only leaves it to the general path
    assert oracle._check_float_fast(out, torch.tensor([math.nan, 1.0, 0.0, 0.0],
                                                        dtype=torch.float64),
                                      None, 1e-3, 1e-5, 1, None) is None
    if dtype not in (getattr(torch, "float8_e4m3fn", None),):
        bad = out.clone()
        bad[0] = math.inf
        assert oracle._check_float_fast(bad, x, None, 1e-3, 1e-5, 1, None) is None
        # the same non-finite value on both sides is the fast path's: it passes
        both = torch.tensor([math.nan, -math.inf, -2.5, 1e-3], dtype=torch.float64)
        got = oracle._check_float_fast(oracle.round_to(both, dtype).to(dtype), both, None,
                                         1e-3, 1e-5, 1, None)
        assert got is not None and not bool(got.mismatch.any())
        # NaN and NaN without equal_nan: the general path's
        assert oracle._check_float_fast(oracle.round_to(both, dtype).to(dtype), both, None,
                                          1e-3, 1e-5, 1, None, equal_nan=False) is None


def test_fast_path_reports_the_mismatch_it_finds():
    x = torch.linspace(-1, 1, 64, dtype=torch.float64)
    out = x.to(torch.float32)
    out[17] += 1e-3
    c = oracle.compare(out, x)
    assert not c.ok and c.mismatched == 1 and c.first[0].index == (17,)
    assert c.max_abs_error == pytest.approx(1e-3, rel=1e-3)
    assert np.isfinite(c.bound_ratio) and c.bound_ratio > 1


@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="no float8_e4m3fn in torch")
def test_an_infinite_reference_in_a_format_without_infinities_mismatches_as_non_finite():
    # e4m3fn has no inf: the reference's inf rounds to 448, and an output of 1 is off; the
    # general path counts that element as a non-finite mismatch, and so must the fast path
    dtype = torch.float8_e4m3fn
    x = torch.tensor([math.inf, 1.0, 448.0], dtype=torch.float64)
    out = torch.tensor([1.0, 1.0, 448.0]).to(dtype)
    fast = oracle._check_float_fast(out, x, None, 0.125, 0.0, 1, None)
    general = oracle._check_float_general(out, x, None, 0.125, 0.0, 1, True)
    assert fast is not None
    assert fast.mismatch.tolist() == general.mismatch.tolist() == [True, False, False]
    assert fast.nonfinite.tolist() == general.nonfinite.tolist() == [True, False, False]


def test_an_output_that_overflowed_where_the_reference_is_beyond_the_range_agrees():
    # float32: the fast path rounds 1.5*max to inf (an IEEE cast), the general path saturates
    # it to max and accepts an infinite output by the overflow rule; both pass it, with the
    # same figures. A finite output there is the general path's to judge.
    big = float(torch.finfo(torch.float32).max) * 1.5
    x = torch.tensor([big, -big, 1.0], dtype=torch.float64)
    out = torch.tensor([math.inf, -math.inf, 1.0], dtype=torch.float32)
    fast = oracle._check_float_fast(out, x, None, 1e-6, 1e-5, 1, None)
    general = oracle._check_float_general(out, x, None, 1e-6, 1e-5, 1, True)
    assert fast is not None
    assert fast.mismatch.tolist() == general.mismatch.tolist() == [False, False, False]
    assert fast.nonfinite.tolist() == general.nonfinite.tolist()
    assert (fast.abs_err, fast.rel_err, fast.ulp_err) == \
        (general.abs_err, general.rel_err, general.ulp_err)
    assert torch.equal(fast.ratio, general.ratio)
    finite = out.clone()
    finite[0] = torch.finfo(torch.float32).max
    assert oracle._check_float_fast(finite, x, None, 1e-6, 1e-5, 1, None) is None


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_an_overflow_to_inf_of_a_reference_beyond_the_range_is_the_fast_paths(dtype):
    # a float16 matmul whose float32 sum exceeds 65504 stores inf where the float64 reference
    # is a finite 3.7e7: the general path passes it by its overflow rule (the band reaches
    # max), and so does the fast path, with the same figures; an inf of the other sign, or
    # where the reference is far inside the range, is left to the general path
    fmax = float(torch.finfo(dtype).max)
    x = torch.tensor([fmax * 567.0, -fmax * 1.01, fmax * (1 - 2.0**-12), 1.0],
                     dtype=torch.float64)
    out = torch.tensor([math.inf, -math.inf, math.inf, 1.0]).to(dtype)
    fast = oracle._check_float_fast(out, x, None, 1e-3, 1e-5, 1, None)
    general = oracle._check_float_general(out, x, None, 1e-3, 1e-5, 1, True)
    assert fast is not None
    assert fast.mismatch.tolist() == general.mismatch.tolist() == [False] * 4
    assert fast.nonfinite.tolist() == general.nonfinite.tolist()
    assert (fast.abs_err, fast.rel_err, fast.ulp_err) == \
        (general.abs_err, general.rel_err, general.ulp_err)
    assert torch.equal(fast.ratio, general.ratio)
    for i, value in ((0, -math.inf), (3, math.inf)):
        wrong = out.clone()
        wrong[i] = value
        assert oracle._check_float_fast(wrong, x, None, 1e-3, 1e-5, 1, None) is None
        assert bool(oracle._check_float_general(wrong, x, None, 1e-3, 1e-5, 1,
                                                True).mismatch[i])


@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="no float8_e4m3fn in torch")
def test_a_nan_for_an_out_of_range_reference_in_a_format_without_infinities():
    # e4m3fn has no inf: a cast of an out-of-range value may give NaN; with equal_nan the
    # general path passes it, and so does the fast path; without equal_nan neither decides it
    dtype = torch.float8_e4m3fn
    x = torch.tensor([1000.0, math.inf, 2.0], dtype=torch.float64)
    out = torch.tensor([math.nan, math.nan, 2.0]).to(dtype)
    fast = oracle._check_float_fast(out, x, None, 0.125, 0.0, 1, None)
    general = oracle._check_float_general(out, x, None, 0.125, 0.0, 1, True)
    assert fast is not None
    assert fast.mismatch.tolist() == general.mismatch.tolist() == [False, False, False]
    assert oracle._check_float_fast(out, x, None, 0.125, 0.0, 1, None, equal_nan=False) is None


# -- the batched check on the outputs' device (oracle._clear_on), against the fast path -------

def _fast_clears(out, x, mag, rtol, atol, r, equal_nan) -> bool:
    c = oracle._check_float_fast(out, x, mag, rtol, atol, r, None, equal_nan)
    return c is not None and not bool(c.mismatch.any())


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck),
          database=None)
@given(st.lists(pairs(), min_size=1, max_size=4))
def test_the_device_check_decides_what_the_fast_path_decides(drawn):
    # the torch operations that run on a GPU, here on the CPU: a member is cleared exactly
    # when the numpy fast path finds no mismatch in it (the comparisons of a batch)
    for out, x, mag, rtol, atol, r, equal_nan, _ in drawn:
        got = oracle._clear_on(out[None], x[None], None if mag is None else mag[None],
                               rtol, atol, r, equal_nan)
        assert got.tolist() == [_fast_clears(out, x, mag, rtol, atol, r, equal_nan)]
    # stacked: members of one shape and dtype, each decided on its own
    out0, x0, mag0, rtol, atol, r, equal_nan, _ = drawn[0]
    same = [d for d in drawn if d[0].dtype == out0.dtype and d[0].shape == out0.shape]
    mags = None if mag0 is None else torch.stack([x.abs() for _, x, *_ in same])
    got = oracle._clear_on(torch.stack([d[0] for d in same]), torch.stack([d[1] for d in same]),
                           mags, rtol, atol, r, equal_nan)
    assert got.tolist() == [
        _fast_clears(o, x, None if mags is None else mags[j], rtol, atol, r, equal_nan)
        for j, (o, x, *_) in enumerate(same)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_rounding_on_the_device_is_numpys_bit_for_bit(dtype):
    f = oracle.float_format(dtype)
    g = torch.Generator().manual_seed(3)
    edges = torch.tensor(_edge_values(dtype), dtype=torch.float64)
    grid = torch.randn(2000, generator=g, dtype=torch.float64) * torch.exp2(
        torch.randint(f.emin - f.mantissa - 3, 20, (2000,), generator=g).double())
    # exact midpoints between neighbours of the grid (ties: half to even)
    mids = oracle.round_to(grid, dtype) + oracle.ulp(grid, dtype) / 2
    x = torch.cat([edges, -edges, grid, mids, torch.tensor([1e300, -1e300, 5e-324])])
    want = oracle._np_round_to(x.numpy(), dtype)
    got = oracle._round_to_on(x, dtype).numpy()
    assert np.array_equal(want.view(np.int64), got.view(np.int64)) or np.array_equal(
        want, got, equal_nan=True)
    same = (want == got) | (np.isnan(want) & np.isnan(got))
    assert same.all()
    assert np.array_equal(np.signbit(want), np.signbit(got))


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_device_check_takes_the_overflow_rule_and_refuses_overflowing_differences(dtype):
    f = oracle.float_format(dtype)
    near = f.max * (1 - 2.0**-12)  # its band (rtol 1e-3) reaches max
    far = f.max / 4
    over = math.inf if f.has_inf else math.nan
    x = torch.tensor([[near], [-near], [far], [near]], dtype=torch.float64)
    out = torch.tensor([[over], [-over], [over], [-over]]).to(dtype)
    for equal_nan in (True, False):
        want = [_fast_clears(o, e, None, 1e-3, 1e-5, 1, equal_nan)
                for o, e in zip(out, x, strict=True)]
        got = oracle._clear_on(out, x, None, 1e-3, 1e-5, 1, equal_nan).tolist()
        assert got == want
        if f.has_inf:
            assert want == [True, True, False, False]
    # a finite pair whose difference overflows, with an infinite magnitude band: not cleared
    big = torch.tensor([[torch.finfo(torch.float64).max]], dtype=torch.float64)
    o = (-big).to(torch.float64)
    mag = torch.full_like(big, math.inf)
    assert not _fast_clears(o[0], big[0], mag[0], 1e-3, 0.0, 1, True)
    assert oracle._clear_on(o, big, mag, 1e-3, 0.0, 1, True).tolist() == [False]
