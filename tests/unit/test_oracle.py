"""The oracle: no false alarms on correct rounding and long fp32 reductions, and real errors,
NaN/inf disagreements and structural problems reported precisely."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fuzzkern import Tolerance
from fuzzkern.judge.oracle import (
    compare,
    default_tolerance,
    round_to,
    score,
    ulp,
    upcast_for_reference,
)

T = Tolerance()
F64 = torch.float64


def f64(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=F64)


# -- defaults ---------------------------------------------------------------------------------


def test_default_tolerances():
    assert default_tolerance(torch.float16) == (1e-3, 1e-5, "float16 default")
    assert default_tolerance(torch.bfloat16)[:2] == (1.6e-2, 1e-5)
    assert default_tolerance(torch.float32)[:2] == (1.3e-6, 1e-5)
    assert default_tolerance(torch.float64)[:2] == (1e-7, 1e-7)
    assert default_tolerance(torch.float8_e4m3fn)[0] == 0.125
    assert default_tolerance(torch.float8_e5m2)[0] == 0.25
    assert default_tolerance(torch.float8_e5m2)[1] < 1e-4
    for dt in (torch.bool, torch.int8, torch.uint8, torch.int32, torch.int64):
        assert default_tolerance(dt)[:2] == (0.0, 0.0)
    assert default_tolerance(torch.int32)[2] == "int32 default"


# -- no false alarms --------------------------------------------------------------------------


def test_exact_match_passes():
    x = torch.randn(7, 5, dtype=torch.float32)
    c = compare((x,), (x.double(),), tolerance=T)
    assert c.ok and c.mismatched == 0 and c.total == 35
    assert c.max_abs_error == 0 and c.max_ulp_error == 0
    assert c.tolerance == "rtol=1.3e-06 atol=1e-05 (float32 default)"


def test_fp16_add_vs_fp64_exact_sum_passes():
    g = torch.Generator().manual_seed(0)
    # wide magnitudes, subnormals included; values chosen so the sum stays in range
    scale = torch.pow(2.0, torch.randint(-26, 12, (20000,), generator=g).double())
    a = (torch.randn(20000, generator=g, dtype=F64) * scale).half()
    b = (torch.randn(20000, generator=g, dtype=F64) * scale.flip(0)).half()
    out = a + b  # fp16 arithmetic: one rounding of the exact sum
    c = compare((out,), (a.double() + b.double(),), tolerance=T)
    assert c.ok, c.summary()
    assert c.max_ulp_error <= 0.5  # a single correct rounding matches the rounded reference
    assert c.max_ulp_error == 0


def _fp32_sequential_sum(x: torch.Tensor) -> float:
    return float(np.cumsum(x.numpy().astype(np.float32), dtype=np.float32)[-1])


@pytest.mark.parametrize("seed", range(5))
def test_fp32_long_reduction_needs_magnitude_term(seed):
    g = torch.Generator().manual_seed(seed)
    n = 4096
    v = torch.randn(n // 2, generator=g, dtype=F64) * torch.pow(
        10.0, torch.rand(n // 2, generator=g, dtype=F64) * 7 - 3
    )
    noise = torch.randn(n // 2, generator=g, dtype=F64) * 1e-3
    x = torch.cat([v, -v + noise])[torch.randperm(n, generator=g)].float()  # heavy cancellation
    out = torch.tensor([_fp32_sequential_sum(x)], dtype=torch.float32)
    xd = x.double()
    expected = (xd.sum().reshape(1),)
    magnitude = (xd.abs().sum().reshape(1),)
    with_mag = compare((out,), expected, tolerance=T, magnitude=magnitude, reduction_length=n)
    assert with_mag.ok, with_mag.summary()
    assert with_mag.tolerance == (
        "rtol=1.3e-06 atol=1e-05 (float32 default) + 4·sqrt(R)·1.19e-07·|ref(|inputs|)| (R=4096)"
    )
    without = compare((out,), expected, tolerance=T, reduction_length=n)
    assert not without.ok  # the error is real rounding, far beyond rtol*|sum| + atol
    assert without.mismatched == 1


def test_magnitude_term_does_not_hide_a_real_reduction_bug():
    g = torch.Generator().manual_seed(1)
    for n in (64, 4096):
        x = torch.randn(4, n, generator=g)
        xd = x.double()
        out = x.sum(1)
        expected, magnitude = (xd.sum(1),), (xd.abs().sum(1),)
        assert compare((out,), expected, tolerance=T, magnitude=magnitude,
                       reduction_length=n).ok
        out[1] = xd[1].abs().sum()  # summed |x| instead of x
        c = compare((out,), expected, tolerance=T, magnitude=magnitude, reduction_length=n)
        assert not c.ok and [m.index for m in c.first] == [(1,)]
    # at a short reduction even one dropped element is far outside rtol*R*|mag|
    x = torch.randn(2, 64, generator=g)
    xd = x.double()
    out = x.sum(1)
    out[0] = x[0, :-1].sum()
    c = compare((out,), (xd.sum(1),), tolerance=T, magnitude=(xd.abs().sum(1),),
                reduction_length=64)
    assert not c.ok and [m.index for m in c.first] == [(0,)]


def test_low_precision_accumulation_is_caught_even_with_the_magnitude_term():
    # an fp16 row sum accumulated in fp16 (the low-precision accumulation bug class) is far
    # outside the fp32-accumulator bound; the same sum accumulated in fp32 passes
    g = torch.Generator().manual_seed(3)
    n = 4096
    x = (0.9 + 0.01 * torch.randn(n, generator=g, dtype=F64)).half()  # fp16 sum stalls at 2048
    xd = x.double()
    acc16 = np.cumsum(x.numpy(), dtype=np.float16)[-1]
    acc32 = np.float16(np.cumsum(x.numpy().astype(np.float32), dtype=np.float32)[-1])
    expected, magnitude = (xd.sum().reshape(1),), (xd.abs().sum().reshape(1),)
    for acc, ok in ((acc32, True), (acc16, False)):
        out = torch.tensor([float(acc)], dtype=torch.float16)
        c = compare((out,), expected, tolerance=T, magnitude=magnitude, reduction_length=n)
        assert c.ok is ok, c.summary()


def test_fp8_roundtrip_and_saturation_pass():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(1000, generator=g, dtype=F64) * 50
    for dt in (torch.float8_e4m3fn, torch.float8_e5m2):
        c = compare((x.to(dt),), (x,), tolerance=T)
        assert c.ok, (dt, c.summary())
        assert c.max_ulp_error <= 1
    big = f64(1000.0, -1e6, math.inf)
    sat = torch.tensor([448.0, -448.0, 448.0]).to(torch.float8_e4m3fn)
    assert compare((sat,), (big,), tolerance=T).ok
    big = f64(1e5, -1e6, math.inf)
    e5 = torch.tensor([57344.0, -math.inf, math.inf]).to(torch.float8_e5m2)
    assert compare((e5,), (big,), tolerance=T).ok
    # 1000 is inside e5m2's range: saturating it is an error
    assert not compare((e5[:1],), (f64(1000.0),), tolerance=T).ok


def test_overflow_to_inf_or_saturated_both_pass():
    ref = f64(1e6, -1e6, 65504.0)
    assert compare((torch.tensor([math.inf, -math.inf, 65504.0]).half(),), (ref,),
                   tolerance=T).ok
    assert compare((torch.tensor([65504.0, -65504.0, math.inf]).half(),), (ref,),
                   tolerance=T).ok
    c = compare((torch.tensor([-math.inf, -65504.0, 1.0]).half(),), (ref,), tolerance=T)
    assert not c.ok and c.mismatched == 2 and c.nonfinite_mismatches == 1


# -- real errors ------------------------------------------------------------------------------


def test_fp16_one_ulp_passes_three_ulp_fails():
    ref = f64(1.0, 2.0, 3.0)
    one = torch.tensor([1.0 + 2**-10, 2.0, 3.0], dtype=torch.float16)
    c = compare((one,), (ref,), tolerance=T)
    assert c.ok and c.max_ulp_error == 1.0
    three = torch.tensor([1.0, 2.0 + 3 * 2**-9, 3.0], dtype=torch.float16)
    c = compare((three,), (ref,), tolerance=T)
    assert not c.ok and c.mismatched == 1 and c.total == 3
    assert c.max_ulp_error == 3.0
    assert c.first[0].index == (1,) and c.first[0].expected == 2.0
    assert c.first[0].got == 2.0 + 3 * 2**-9
    assert c.max_abs_error == 3 * 2**-9
    assert c.max_rel_error == pytest.approx(3 * 2**-10)


def test_bf16_output_tolerance():
    ref = f64(1.0, 10.0, -100.0, 0.1)
    near = round_to(ref, torch.bfloat16) + 2 * ulp(ref, torch.bfloat16)  # 2 ulp: within 1.6e-2
    assert compare((near.to(torch.bfloat16),), (ref,), tolerance=T).ok
    far = round_to(ref, torch.bfloat16) + 3 * ulp(ref, torch.bfloat16)
    far[1:] = ref[1:]
    c = compare((far.to(torch.bfloat16),), (ref,), tolerance=T)
    assert not c.ok and c.mismatched == 1 and c.max_ulp_error == 3.0
    assert c.tolerance == "rtol=0.016 atol=1e-05 (bfloat16 default)"


def test_ulp_figures():
    one = torch.tensor([1.0 + 2**-23], dtype=torch.float32)
    c = compare((one,), (f64(1.0),), tolerance=T)
    assert c.max_ulp_error == 1.0 and c.ok
    c = compare((torch.tensor([1.0]),), (f64(1.0 + 2**-23),), tolerance=T)
    assert c.max_ulp_error == 1.0
    # fp16 subnormal: spacing 2**-24
    c = compare((torch.tensor([2**-23], dtype=torch.float16),), (f64(2**-24),), tolerance=T)
    assert c.max_ulp_error == 1.0
    assert ulp(f64(0.0, 1.0, 1.5, 2.0), torch.float16).tolist() == [
        2**-24, 2**-10, 2**-10, 2**-9]
    assert ulp(f64(0.0, 5e-324, 1.0), torch.float64).tolist() == [2**-1074, 2**-1074, 2**-52]
    assert ulp(f64(3.0), torch.int32).tolist() == [1.0]


def test_round_to_is_correct_rounding():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5000, generator=g, dtype=F64) * torch.pow(
        2.0, torch.randint(-30, 30, (5000,), generator=g).double())
    for dt in (torch.float16, torch.bfloat16, torch.float32, torch.float8_e5m2):
        r = round_to(x, dt)
        finite = torch.isfinite(r) & (r.abs() < torch.finfo(dt).max)
        assert torch.equal(r[finite].to(dt).double(), r[finite])  # on the grid
        assert ((r - x).abs()[finite] <= ulp(x, dt)[finite] / 2).all()  # nearest
    # ties go to even: 1 + 2**-11 lies halfway between 1 and 1 + 2**-10 in fp16
    assert round_to(f64(1 + 2**-11, 1 + 3 * 2**-11), torch.float16).tolist() == [
        1.0, 1 + 2**-9]


# -- NaN and inf ------------------------------------------------------------------------------


def test_nan_vs_number_fails_and_is_counted():
    out = torch.tensor([math.nan, 1.0, 2.0])
    c = compare((out,), (f64(0.5, 1.0, math.nan),), tolerance=T)
    assert not c.ok and c.mismatched == 2 and c.nonfinite_mismatches == 2
    assert [m.index for m in c.first] == [(0,), (2,)]
    assert math.isnan(c.first[0].got) and c.first[0].expected == 0.5
    assert c.first[1].got == 2.0 and math.isnan(c.first[1].expected)
    assert "2 NaN/inf positions differ" in c.summary()


def test_nan_vs_nan_passes_unless_equal_nan_false():
    out = torch.tensor([math.nan, 1.0], dtype=torch.float16)
    ref = f64(math.nan, 1.0)
    assert compare((out,), (ref,), tolerance=T).ok
    c = compare((out,), (ref,), tolerance=Tolerance(equal_nan=False))
    assert not c.ok and c.nonfinite_mismatches == 1


def test_inf_sign_and_position():
    ref = f64(math.inf, -math.inf, 1.0)
    assert compare((torch.tensor([math.inf, -math.inf, 1.0]),), (ref,), tolerance=T).ok
    c = compare((torch.tensor([-math.inf, -math.inf, 1.0]),), (ref,), tolerance=T)
    assert not c.ok and c.mismatched == 1 and c.nonfinite_mismatches == 1
    c = compare((torch.tensor([math.inf, -math.inf, math.inf]),), (ref,), tolerance=T)
    assert not c.ok and c.nonfinite_mismatches == 1  # 1.0 is far from overflow
    c = compare((torch.tensor([3e38, -math.inf, 1.0]),), (ref,), tolerance=T)
    assert not c.ok and c.nonfinite_mismatches == 1


# -- structure --------------------------------------------------------------------------------


def test_shape_mismatch_is_structural_even_with_same_numel():
    c = compare((torch.zeros(3, 4),), (torch.zeros(4, 3, dtype=F64),), tolerance=T)
    assert not c.ok and c.structural == (
        "the output has shape (3, 4) but the reference has shape (4, 3)")
    c = compare((torch.zeros(12),), (torch.zeros(12, 1, dtype=F64),), tolerance=T)
    assert not c.ok and c.structural
    c = compare((torch.zeros(()),), (torch.zeros(1, dtype=F64),), tolerance=T)
    assert not c.ok and c.structural
    assert score(c) > 0 and math.isfinite(score(c))


def test_output_count_mismatch_is_structural():
    c = compare((torch.zeros(3),), (torch.zeros(3), torch.zeros(3)), tolerance=T)
    assert not c.ok and "1 output(s)" in c.structural and "returned 2" in c.structural
    c = compare((torch.zeros(3), None), (torch.zeros(3), torch.zeros(3)), tolerance=T)
    assert not c.ok and "output 1 is NoneType None, not a tensor" in c.structural


# -- integers and bool ------------------------------------------------------------------------


def test_int_exact_compare():
    ref = torch.tensor([1, 2, 3, -4], dtype=torch.int64)
    assert compare((ref.int(),), (ref,), tolerance=T).ok
    c = compare((torch.tensor([1, 2, 4, -4], dtype=torch.int32),), (ref,), tolerance=T)
    assert not c.ok and c.mismatched == 1 and c.max_abs_error == 1 and c.max_ulp_error == 1
    assert c.first[0].got == 4 and c.first[0].expected == 3
    assert isinstance(c.first[0].got, int)
    assert c.tolerance == "exact (int32 default)"
    c = compare((torch.tensor([1, 2, 4, -4], dtype=torch.int32),), (ref,),
                tolerance=Tolerance(atol=1))
    assert c.ok and c.tolerance == "atol=1 (target override)"
    # int8 wraps like the kernel's arithmetic; uint8; float reference truncates toward zero
    assert compare((torch.tensor([44], dtype=torch.int8),), (torch.tensor([300]),),
                   tolerance=T).ok
    assert compare((torch.tensor([255, 0], dtype=torch.uint8),), (f64(255.0, 0.0),),
                   tolerance=T).ok
    assert compare((torch.tensor([2, -2], dtype=torch.int32),), (f64(2.7, -2.7),),
                   tolerance=T).ok
    c = compare((torch.tensor([0], dtype=torch.int32),), (f64(math.nan),), tolerance=T)
    assert not c.ok and c.nonfinite_mismatches == 1


def test_bool_compare():
    ref = torch.tensor([True, False, True])
    assert compare((ref.clone(),), (ref,), tolerance=T).ok
    assert compare((ref.clone(),), (f64(1.0, 0.0, 0.5),), tolerance=T).ok
    c = compare((torch.tensor([True, True, True]),), (ref,), tolerance=T)
    assert not c.ok and c.first[0].index == (1,) and c.first[0].got == 1


def test_mixed_outputs_tolerance_text():
    c = compare((torch.zeros(2), torch.zeros(2, dtype=torch.int32)),
                (torch.zeros(2, dtype=F64), torch.zeros(2, dtype=torch.int64)), tolerance=T)
    assert c.ok
    assert c.tolerance == (
        "out0: rtol=1.3e-06 atol=1e-05 (float32 default); out1: exact (int32 default)")


# -- layouts, sizes, reporting ----------------------------------------------------------------


def test_first_mismatches_in_row_major_order_on_transposed_output():
    ref = torch.arange(12, dtype=F64).reshape(4, 3)
    base = ref.t().contiguous().float()  # (3, 4) storage
    out = base.t()  # (4, 3) view, column-major in memory
    assert not out.is_contiguous()
    for i, j in ((3, 1), (0, 2), (1, 0), (2, 2)):
        out[i, j] += 100
    c = compare((out,), (ref,), tolerance=T, max_report=3)
    assert c.mismatched == 4
    assert [m.index for m in c.first] == [(0, 2), (1, 0), (2, 2)]
    assert [m.got for m in c.first] == [102.0, 103.0, 108.0]
    assert [m.expected for m in c.first] == [2.0, 3.0, 8.0]


def test_expanded_and_strided_views_and_multiple_outputs():
    row = torch.arange(5, dtype=torch.float32)
    out0 = row.expand(3, 5)  # stride 0
    out1 = torch.arange(20, dtype=torch.float32)[::4]
    ref0 = torch.arange(5, dtype=F64).repeat(3, 1)
    ref1 = torch.arange(0, 20, 4, dtype=F64).clone()
    ref1[4] = -1
    c = compare((out0, out1), (ref0, ref1), tolerance=T)
    assert not c.ok and c.mismatched == 1 and c.total == 20
    assert c.first[0].output == 1 and c.first[0].index == (4,)
    assert "out1[4]: got 16.0, expected -1.0" in c.summary()


def test_zero_size_and_zero_dim():
    c = compare((torch.empty(0, 3, dtype=torch.float16),), (torch.empty(0, 3, dtype=F64),),
                tolerance=T)
    assert c.ok and c.total == 0 and score(c) == 0.0
    c = compare((torch.tensor(2.5),), (torch.tensor(2.5, dtype=F64),), tolerance=T)
    assert c.ok and c.total == 1
    c = compare((torch.tensor(2.5),), (torch.tensor(3.5, dtype=F64),), tolerance=T)
    assert not c.ok and c.first[0].index == ()


def test_tolerance_override_text():
    out = torch.tensor([1.05])
    c = compare((out,), (f64(1.0),), tolerance=Tolerance(rtol=0.1, atol=0.0))
    assert c.ok and c.tolerance == "rtol=0.1 atol=0 (target override)"
    c = compare((out,), (f64(1.0),), tolerance=Tolerance(rtol=0.01))
    assert not c.ok and c.tolerance == "rtol=0.01 atol=1e-05 (target override; atol: float32 " \
        "default)"
    assert "target override" in c.summary()


def test_expected_on_other_dtype_and_scalar_reference():
    out = torch.tensor([0.1, 0.2], dtype=torch.float16)
    assert compare((out,), (torch.tensor([0.1, 0.2], dtype=torch.float32),), tolerance=T).ok
    assert compare((torch.tensor(3.0),), (3.0,), tolerance=T).ok
    assert compare(torch.tensor([1.0]), torch.tensor([1.0], dtype=F64), tolerance=T).ok


def test_score_is_finite_and_grows():
    ref = f64(0.0, 1.0)
    small = compare((torch.tensor([0.0, 1.0 + 2**-23]),), (ref,), tolerance=T)
    big = compare((torch.tensor([1e-3, 1.0]),), (ref,), tolerance=T)  # rel error inf
    assert math.isinf(big.max_rel_error)
    nan = compare((torch.tensor([math.nan, 1.0]),), (ref,), tolerance=T)
    huge = compare((torch.tensor([3e38, 1.0], dtype=F64),), (f64(-3e38, 1.0),), tolerance=T)
    scores = [score(x) for x in (small, big, nan, huge)]
    assert all(math.isfinite(s) for s in scores)
    assert score(small) < score(big)
    assert score(nan) > 1


def test_upcast_for_reference():
    x = torch.randn(4, 3).to(torch.bfloat16).t()
    u = upcast_for_reference(x)
    assert u.dtype == F64 and u.shape == x.shape and torch.equal(u, x.double())
    y = torch.randn(3, dtype=F64)
    uy = upcast_for_reference(y)
    assert uy.data_ptr() != y.data_ptr()
    i = torch.tensor([1, 2], dtype=torch.int8)
    assert upcast_for_reference(i).dtype == torch.int8
    assert upcast_for_reference(torch.tensor([True])).dtype == torch.bool
    f8 = torch.tensor([0.5, 448.0]).to(torch.float8_e4m3fn)
    assert upcast_for_reference(f8).tolist() == [0.5, 448.0]


def test_a_million_element_transposed_output():
    # (speed is measured in bench/, not here)
    g = torch.Generator().manual_seed(4)
    ref = torch.randn(1000, 1000, generator=g, dtype=F64)
    out = ref.float().t().contiguous().t()
    out[::7, ::5] += 1
    c = compare((out,), (ref,), tolerance=T, magnitude=(ref.abs(),), reduction_length=1)
    assert not c.ok and c.mismatched == 143 * 200 and len(c.first) == 5
    assert c.first[1].index == (0, 5)


# -- rule 7: the reference at the kernel's precision --------------------------------------------


def test_accept_native_takes_only_elements_right_against_the_native_reference():
    from fuzzkern.judge.oracle import accept_native

    expected = (f64(-0.63, 1.0, 2.0),)
    native = (torch.tensor([-0.0, 1.0, 5.0]),)
    # element 0: wrong vs float64, right vs native -> taken; element 2: wrong vs both -> kept
    adjusted, n = accept_native(expected, native, [torch.tensor([True, False, True])],
                                [torch.tensor([False, False, True])])
    assert n == 1
    assert adjusted[0].tolist() == [-0.0, 1.0, 2.0]
    assert accept_native(expected, native, [torch.tensor([False, False, True])],
                         [torch.tensor([False, False, True])]) is None


def test_intermediate_overflow_at_the_kernels_precision_is_not_a_kernel_bug():
    """exp(x/2)/exp(x/2) for |x| in 256..1024: NaN in float32 (torch and kernel alike), 1 in
    float64. Judged against the float32 reference those elements pass; a kernel that is also
    wrong where float32 is fine still fails."""
    import importlib.util
    import pathlib

    import fuzzkern
    from fuzzkern import strategies as fks
    from fuzzkern.case.model import Case, TensorCase, Values
    from fuzzkern.execution.runner import run_case
    from fuzzkern.judge.outcome import Verdict

    path = pathlib.Path(__file__).parent / "targets" / "native_precision.py"
    spec = importlib.util.spec_from_file_location("native_precision", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def target(launcher):
        return fuzzkern.Target(launcher=launcher, reference=mod.reference,
                               inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                               dims={"N": fks.sizes(max_value=8)})

    # three elements beyond exp's float32 range, one zero (finite everywhere)
    x = TensorCase.build((4,), "float32", values=Values(0, "large", ((0, "-0.0"),)))
    case = Case({"N": 4}, {"x": x})
    o = run_case(target(mod.ratio), case, {"modes": ["interpret"]})
    assert o.verdict == Verdict.PASS, o.message
    assert "inputs' precision" in o.modes["interpret"].comparison.tolerance

    wrong = run_case(target(lambda x: mod.ratio(x, wrong=True)), case,
                     {"modes": ["interpret"]})
    assert wrong.verdict == Verdict.KERNEL_BUG  # wrong where float32 is fine: element 0
    (m,) = wrong.modes["interpret"].comparison.first
    assert m.index == (0,) and (m.got, m.expected) == (2.0, 1.0)


def test_compiled_float32_allows_approximate_gpu_math_and_nothing_more():
    # tl.sigmoid(g) * g * up on the H200 (ex2.approx of fl(-g * log2 e), div.full): 24 ulp off
    # the float64 reference; the interpreter (numpy, correctly rounded) keeps the tight default.
    got = torch.tensor([-1.596799450473971e20], dtype=torch.float32)
    expected = f64(-1.5967951577068487e20)
    strict = compare(got, expected)
    assert not strict.ok and "float32 default" in strict.tolerance
    gpu = compare(got, expected, compiled=True)
    assert gpu.ok, gpu
    assert "rtol=7.62939e-06" in gpu.tolerance and "compiled code" in gpu.tolerance
    assert default_tolerance(torch.float32, compiled=True)[0] == 2.0**-17
    # 100 ulp is a bug in compiled code too
    off = torch.tensor([1024.0 * (1.0 + 100 * 2.0**-23)], dtype=torch.float32)
    assert not compare(off, f64(1024.0), compiled=True).ok
    # a target's own rtol is never widened; fp16's default already covers approximate math
    assert not compare(got, expected, tolerance=Tolerance(rtol=1e-6), compiled=True).ok
    assert default_tolerance(torch.float16, compiled=True) == default_tolerance(torch.float16)
