"""Oracle rules 8 and 9: correct computations on ill-conditioned inputs pass (or at worst are
accuracy findings), small logic bugs stay mismatches. The "kernels" here are torch computations
with the numerics of a correct kernel (float32 arithmetic, fp16 rounding of intermediates,
sequential sums), judged through the same :class:`~fuzzkern.judge.conditioning.Evidence` the runner
builds from a target's reference."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
import torch

from fuzzkern import Tolerance
from fuzzkern.judge.conditioning import Evidence
from fuzzkern.judge.oracle import compare
from fuzzkern.judge.outcome import Comparison

F64 = torch.float64


def judge(kernel_out: Any, reference: Callable[..., Any], inputs: Mapping[str, Any],
          dims: Mapping[str, int] | None = None, tolerance: Tolerance | None = None,
          reduction: int | None = None) -> tuple[Comparison, Comparison]:
    """(plain comparison, comparison with the evidence), as the runner makes them."""
    values = {k: (v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
              for k, v in inputs.items()}
    dtypes = {k: (v.dtype if isinstance(v, torch.Tensor) else torch.float32)
              for k, v in inputs.items()
              if isinstance(v, torch.Tensor) or isinstance(v, float)}

    def call(v: Mapping[str, Any]) -> tuple[Any, ...]:
        r = reference(**v)
        return tuple(r) if isinstance(r, tuple) else (r,)

    def native() -> tuple[Any, ...]:
        return call(inputs)

    expected = call(values)
    outs = kernel_out if isinstance(kernel_out, tuple) else (kernel_out,)
    plain = compare(outs, expected, tolerance=tolerance)
    ev = Evidence(call, values, dtypes, native=native, dims=dims or {}, reduction=reduction)
    return plain, compare(outs, expected, tolerance=tolerance, evidence=ev)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# -- correct kernels, ill-conditioned inputs: pass ---------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_axpy_with_cancellation_passes(dtype):
    g = gen(0)
    x = (torch.randn(4096, generator=g) * 100).to(dtype)
    alpha = 2.718281828459045
    # y ~ -alpha*x: the result is the small difference of two large numbers
    y = (-(alpha * x.double()) + torch.randn(4096, generator=g, dtype=F64) * 1e-2).to(dtype)
    out = (torch.tensor(alpha, dtype=torch.float32) * x.float() + y.float()).to(dtype)
    plain, c = judge(out, lambda x, y, alpha: alpha * x + y, {"x": x, "y": y, "alpha": alpha})
    assert not plain.ok  # the float64 reference alone calls this a bug
    assert c.ok, c.summary()
    assert 0 < c.bound_ratio < 1


def test_layernorm_element_equal_to_row_mean_with_large_weight_passes():
    g = gen(1)
    x = (torch.randint(-3, 4, (64, 5), generator=g) + 1000.3).float()
    x[:, 2] = x.double().mean(1).float()  # not exact in float32: x - mean ~ 1 rounding
    w = torch.full((5,), 3e3)

    def ln(x, w):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + 1e-5) * w

    out = ln(x, w)  # float32 throughout, as a kernel computes it
    plain, c = judge(out, ln, {"x": x, "w": w})
    assert not plain.ok
    assert c.ok, c.summary()


def test_matmul_with_mixed_sign_large_terms_passes_without_declared_reduction():
    g = gen(2)
    a = (torch.randn(16, 512, generator=g) * 30).half()
    b = (torch.randn(512, 16, generator=g) * 30).half()
    out = (a.float() @ b.float()).half()
    plain, c = judge(out, lambda a, b: a @ b, {"a": a, "b": b}, dims={"M": 16, "K": 512, "N": 16})
    assert c.ok, c.summary()


def test_matmul_missing_term_is_a_kernel_bug():
    g = gen(3)
    k = 4096
    a = torch.randn(4, k, generator=g)
    b = torch.randn(k, 4, generator=g)
    a[1, 7] = 40.0  # the dropped term is not negligible
    good = a @ b
    bad = good.clone()
    bad[1] = a[1, :-1] @ b[:-1] if False else (a[1].double() @ b.double() - a[1, 7].double()
                                                 * b[7].double()).float()
    _, ok = judge(good, lambda a, b: a @ b, {"a": a, "b": b}, dims={"M": 4, "K": k, "N": 4})
    assert ok.ok, ok.summary()
    _, c = judge(bad, lambda a, b: a @ b, {"a": a, "b": b}, dims={"M": 4, "K": k, "N": 4})
    assert not c.ok and not c.accuracy, c.summary()
    assert {m.index[0] for m in c.first} == {1}


def test_reference_in_float32_passes_an_accurate_kernel():
    g = gen(4)
    x = torch.randn(2048, generator=g) * 20

    def ref(x):
        return torch.nn.functional.gelu(x.float())  # Liger-style: the reference's own float32

    exact = torch.nn.functional.gelu(x.double())
    out = exact.float()
    plain, c = judge(out, ref, {"x": x})
    assert c.ok, c.summary()


def _rms_fp16(x, w, eps=1e-6):
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * rstd).to(x.dtype) * w  # Llama: round to the input dtype before the weight


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_llama_rmsnorm_rounding_intermediates_is_not_a_kernel_bug(dtype):
    g = gen(5)
    x = (torch.randn(32, 256, generator=g) * 3).to(dtype)
    w = (torch.randn(256, generator=g) * 2).to(dtype)
    out = _rms_fp16(x, w)

    def ref(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    plain, c = judge(out, ref, {"x": x, "w": w})
    assert c.ok or c.accuracy, c.summary()


def test_sequential_fp32_prefix_sum_passes():
    g = gen(6)
    x = torch.randn(4, 4096, generator=g) + 0.1
    out = torch.from_numpy(np.cumsum(x.numpy(), axis=1, dtype=np.float32))
    plain, c = judge(out, lambda x: torch.cumsum(x, 1), {"x": x}, dims={"M": 4, "N": 4096})
    assert c.ok, c.summary()


# -- small logic bugs: still kernel bugs ---------------------------------------------------------


def test_rmsnorm_with_the_wrong_eps_is_a_kernel_bug_on_small_rows():
    g = gen(7)
    x = torch.randn(8, 64, generator=g) * 1e-3  # mean(x^2) ~ 1e-6: eps matters

    def rms(x, eps=1e-5):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

    out = rms(x, eps=1e-6)
    _, c = judge(out, rms, {"x": x})
    assert not c.ok and not c.accuracy, c.summary()


def test_softmax_shifted_by_max_abs_is_a_kernel_bug():
    x = torch.tensor([[-120.0, 1.0, 2.0, 0.5]])

    def softmax(x):
        return torch.softmax(x, -1)

    e = torch.exp(x - x.abs().amax(-1, keepdim=True))  # underflows to 0 everywhere
    out = e / e.sum(-1, keepdim=True)
    _, c = judge(out, softmax, {"x": x})
    assert not c.ok and not c.accuracy


def test_bias_missing_in_one_column_is_a_kernel_bug():
    g = gen(8)
    a = torch.randn(8, 64, generator=g)
    w = torch.randn(64, 16, generator=g)
    bias = torch.randn(16, generator=g)
    out = a @ w + bias
    out[:, 5] -= bias[5]
    _, c = judge(out, lambda a, w, bias: a @ w + bias, {"a": a, "w": w, "bias": bias},
                 dims={"M": 8, "K": 64, "N": 16})
    assert not c.ok and not c.accuracy
    assert {m.index[1] for m in c.first} == {5}


def test_explanation_names_the_sensitive_input():
    x = torch.tensor([1.0, 1.0000001, 1.0, 1.0])
    w = torch.tensor([1e4, 1e4, 1e4, 1e4])

    def f(x, w):
        return (x - x.mean()) * w

    out = f(x.double(), w.double()).float() + torch.tensor([0.0, 0.0, 0.0, 0.5])  # a real bug
    _, c = judge(out, f, {"x": x, "w": w})
    assert not c.ok
    assert "out[3]" in c.explanation and "moves by" in c.explanation
    assert c.condition["sensitive_input"] in ("x", "w")
    assert c.condition["ratio"] > 1


def test_non_adaptive_tolerance_keeps_the_plain_rule():
    g = gen(0)
    x = torch.randn(256, generator=g, dtype=F64) * 100
    alpha = 2.718281828459045
    y = -(alpha * x) + 1e-2
    out = (torch.tensor(alpha, dtype=torch.float32).double() * x + y).float()

    def call(v):
        return (v["alpha"] * v["x"] + v["y"],)

    values = {"x": x, "y": y, "alpha": alpha}
    ev = Evidence(call, values, {"x": torch.float32, "y": torch.float32, "alpha": torch.float32})
    assert compare((out,), call(values), evidence=ev).ok
    ev = Evidence(call, values, {"x": torch.float32, "y": torch.float32, "alpha": torch.float32})
    c = compare((out,), call(values), evidence=ev, tolerance=Tolerance(adaptive=False))
    assert not c.ok and not c.accuracy


def test_overflow_of_intermediate_terms_is_accepted():
    # a @ b with b at float32's max: the first product overflows float32 in any order, the
    # exact sum is finite; a kernel's inf is the format's. Torch at float32 gives NaN (inf +
    # -inf), or inf where the CPU's BLAS fuses multiply-adds (inf + an exact finite product):
    # then the output is explained by the reference at the inputs' precision (rule 7) first
    a = torch.tensor([[1.5409960746765137, -0.293428897857666, -2.1787893772125244]])
    b = torch.full((3, 1), torch.finfo(torch.float32).max)
    for out in (torch.tensor([[float("inf")]]), torch.tensor([[float("nan")]])):
        plain, c = judge(out, lambda a, b: a @ b, {"a": a, "b": b},
                         dims={"M": 1, "K": 3, "N": 1})
        assert not plain.ok and plain.nonfinite_mismatches == 1
        assert c.ok, c.summary()
        native = a @ b
        if torch.equal(native, out) or bool(torch.isnan(native).all() & torch.isnan(out).all()):
            assert "inputs' precision" in c.tolerance
        else:  # the output is none of torch's at float32: the overflow explains it
            assert "overflow the accumulator" in c.tolerance
    # a finite reference with small terms: an inf output stays a NaN/inf mismatch
    b = torch.ones(3, 1)
    _, c = judge(out, lambda a, b: a @ b, {"a": a, "b": b}, dims={"M": 1, "K": 3, "N": 1})
    assert not c.ok and c.nonfinite_mismatches == 1 and not c.accuracy


# -- tolerances as users need them ------------------------------------------------------------


def test_liger_convention_in_one_line():
    t = Tolerance(rtol=1e-2, atol=1e-2, dtypes={"float32": 1e-5})
    x = torch.ones(4, dtype=F64)
    # 1e-3 off: fine at fp16 under 1e-2, a mismatch at fp32 under 1e-5
    assert compare((torch.full((4,), 1.001, dtype=torch.float16),), (x,), tolerance=t).ok
    c = compare((torch.full((4,), 1.001, dtype=torch.float32),), (x,), tolerance=t)
    assert not c.ok and "rtol=1e-05 atol=1e-05" in c.tolerance
    assert Tolerance(dtypes={torch.bfloat16: (0.5, 0.25)}).for_output(0, None, torch.bfloat16) \
        .atol == 0.25


def test_per_output_tolerance_by_index_and_name():
    x = torch.ones(3, dtype=F64)
    off = torch.full((3,), 1.01)
    t = Tolerance(outputs={1: Tolerance(rtol=0.1)})
    c = compare((off, off), (x, x), tolerance=t)
    assert not c.ok and {m.output for m in c.first} == {0}
    t = Tolerance(outputs={"dx": Tolerance(rtol=0.1)})
    c = compare((off, off), (x, x), tolerance=t, names=("y", "dx"))
    assert {m.output for m in c.first} == {0}


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1e-3, "1e-3", True])
def test_bad_tolerances_are_rejected_at_definition(bad):
    from fuzzkern.errors import InvalidArgument

    with pytest.raises(InvalidArgument):
        Tolerance(rtol=bad)
    with pytest.raises(InvalidArgument):
        Tolerance(dtypes={"float32": (1e-5, bad)})
    with pytest.raises(InvalidArgument):
        Tolerance(outputs={0: bad})


def test_overflowing_intermediate_from_an_extreme_input_is_an_accuracy_finding():
    # the tutorial LayerNorm on a row holding float32's lowest: (x - mean)**2 overflows, the
    # variance is inf and every output is the bias; torch survives it. A robustness limit of
    # the kernel, reported, not sold as a logic bug.
    x = torch.tensor([[-3.4e38, -2.0, -1.5, -2.5, -1.0]])

    def ln(x):
        return torch.nn.functional.layer_norm(x, (5,))

    out = torch.zeros_like(x)  # rstd = 0: every element is the (zero) bias
    _, c = judge(out, ln, {"x": x})
    assert not c.ok and c.accuracy
    assert "beyond the square root of the float32 range" in c.explanation
    assert c.condition["extreme_input"] == "x"


def test_nan_from_overflowing_terms_passes_where_the_reference_is_inf():
    a = torch.tensor([[4.0, -3.0]])
    b = torch.tensor([[float("inf")], [torch.finfo(torch.float32).max]])
    out = torch.tensor([[float("nan")]])  # inf + (-inf) in float32
    _, c = judge(out, lambda a, b: a @ b, {"a": a, "b": b}, dims={"M": 1, "K": 2, "N": 1})
    assert c.ok, c.summary()


def test_fp16_sum_overflowing_its_own_dtype_is_an_accuracy_finding_not_a_bug():
    # fused add + RMSNorm in float16 (Liger's style: h = x + residual stored in the input
    # dtype): residual at float16's max makes h inf in float16, so y is NaN; a float32
    # reference never overflows. The format's limit, not the kernel's logic.
    x = torch.tensor([[100.0, 1.0]], dtype=torch.float16)
    residual = torch.tensor([[65504.0, 2.0]], dtype=torch.float16)

    def ref(x, residual):
        h = x.float() + residual.float()
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)

    out = torch.tensor([[float("nan"), float("nan")]], dtype=torch.float16)
    plain, c = judge(out, ref, {"x": x, "residual": residual})
    assert not plain.ok
    assert not c.ok and c.accuracy
    assert "beyond half the float16 range" in c.explanation
    assert c.condition["extreme_input"] == "residual"
    # the same NaN output from inputs far from the range's end is a bug, not an accuracy note
    small = torch.tensor([[100.0, 2.0]], dtype=torch.float16)
    _, c = judge(out, ref, {"x": x, "residual": small})
    assert not c.ok and not c.accuracy


# -- attention: probabilities rounded to bf16 before the second dot (FlashAttention's design) --


def _attention_ref(q, k, v):
    return torch.softmax((q @ k.T) * (1.0 / q.shape[1] ** 0.5), dim=-1) @ v


def _attention_kernel(q, k, v, block=16, rescale=True):
    """The fused-attention recurrence in float32 (running max, running sum), with the
    unnormalized probabilities rounded to v's dtype before the second dot; ``rescale=False``
    forgets to rescale the accumulator when the running max grows (a logic bug)."""
    s = (q.float() @ k.float().T) * (1.0 / q.shape[1] ** 0.5)
    m = torch.full((q.shape[0],), -torch.inf)
    den = torch.zeros(q.shape[0])
    acc = torch.zeros(q.shape[0], v.shape[1])
    for j in range(0, k.shape[0], block):
        sj = s[:, j:j + block]
        mj = torch.maximum(m, sj.max(1).values)
        p = torch.exp(sj - mj[:, None])
        alpha = torch.exp(m - mj)
        den = den * alpha + p.sum(1)
        if rescale:
            acc = acc * alpha[:, None]
        acc = acc + p.to(v.dtype).float() @ v[j:j + block].float()
        m = mj
    return (acc / den[:, None]).to(q.dtype)


def _attention_inputs(seed):
    g = gen(seed)
    q = (torch.randn(4, 46, generator=g) * 3).to(torch.bfloat16)
    k = torch.rand(46, 46, generator=g).to(torch.bfloat16)
    v = torch.randint(-4, 5, (46, 46), generator=g).to(torch.bfloat16)  # outputs cancel
    return {"q": q, "k": k, "v": v}


def test_attention_rounding_probabilities_to_bf16_passes_where_outputs_cancel():
    """Torch rounds the normalized softmax to bf16, the kernel the unnormalized exp: each is
    off by a fraction of an ulp of the terms, and where small-integer values cancel to near 0
    torch can be right by luck at an element where the kernel is 50+ result ulps off (an H200
    false alarm, 2026-12-01). Judged in ulps of the terms' magnitude, every seed passes (with
    the per-element level alone, 27 of these 40 failed)."""
    dims = {"M": 4, "N": 46, "D": 46}
    plain_failures = 0
    for seed in range(40):
        ins = _attention_inputs(seed)
        plain, c = judge(_attention_kernel(**ins), _attention_ref, ins, dims=dims)
        plain_failures += not plain.ok
        assert c.ok, (seed, c.summary(), c.explanation)
    assert plain_failures == 40  # the plain tolerance alone calls every one a bug


def test_attention_without_the_accumulator_rescale_is_a_kernel_bug():
    dims = {"M": 4, "N": 46, "D": 46}
    bugs = 0
    for seed in range(20):
        ins = _attention_inputs(seed)
        _, c = judge(_attention_kernel(**ins, rescale=False), _attention_ref, ins, dims=dims)
        assert not c.ok
        bugs += not c.accuracy
    assert bugs >= 18


def test_an_infinite_input_leaves_the_magnitude_of_finite_elements_finite():
    """One +inf in attention's k: every row of ``softmax(|q||k|^T)`` would be NaN, but a row
    whose score for that key is -inf weighs it 0 and is finite; its terms' magnitude counts
    the finite terms (an H200 false alarm of 2026-12-01 had no magnitude, so no level)."""
    g = gen(5)
    q = torch.randn(17, 8, generator=g).double()
    k = torch.randint(-4, 5, (33, 8), generator=g).double()
    v = torch.randint(-4, 5, (33, 8), generator=g).double()
    k[0, 0] = torch.inf

    def call(values):
        return (_attention_ref(**values),)

    ins = {"q": q, "k": k, "v": v}
    ev = Evidence(call, ins, {n: torch.bfloat16 for n in ins}, dims={"M": 17, "N": 33, "D": 8})
    (expected,) = call(ins)
    mag = ev.magnitude()
    assert mag is not None
    (m,) = mag[0]
    finite = torch.isfinite(expected)
    assert 0 < int(finite.sum()) < expected.numel()  # some rows see the inf, some weigh it 0
    assert bool(torch.isfinite(m[finite]).all()) and bool((m[finite] > 0).any())


# -- an fp16 intermediate against a float32 reference: a few output ulps, by design ------------

#: the H200 false alarm of 2026-12-01 (bench/accuracy/ok_add_rmsnorm_fp32ref, compiled): the
#: case as fuzzkern saved it
_FUSED_ADD_RMSNORM_CASE = {
    "version": 1, "dims": {"M": 1, "N": 7}, "configs": {},
    "inputs": {name: {"tensor": {
        "shape": shape, "dtype": "float16", "strides": strides, "storage_offset": 0,
        "storage_size": 7, "values": {"seed": seed, "distribution": dist, "specials": []},
        "layout": {"permutation": list(range(len(shape))), "steps": [1] * len(shape),
                   "starts": [0] * len(shape), "offset": 0, "expanded": []}}}
        for name, shape, strides, seed, dist in [("x", [1, 7], [7, 1], 838, "wide"),
                                                 ("residual", [1, 7], [7, 1], 0, "normal"),
                                                 ("w", [7], [1], 41, "large")]}}


def _fused_add_rmsnorm(x, residual, w, eps=1e-6):
    """Liger's fused_add_rms_norm: h = x + residual stored in fp16 (an output), y computed from
    that rounded h in float32, rounded to fp16."""
    h = x + residual
    s = h.float()
    rstd = torch.rsqrt((s * s).sum(-1, keepdim=True) / s.shape[-1] + eps)
    return h, (s * rstd * w.float()).to(x.dtype)


def _fp32_reference(x, residual, w):
    hidden = x.float() + residual.float()  # Liger's tests: never rounded to fp16
    y = w.float() * (hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + 1e-6))
    return hidden, y


def test_an_fp16_intermediate_against_a_float32_reference_is_an_accuracy_finding():
    """The kernel's y is 2 fp16 ulps off a reference that never rounds h: beyond the fp16
    tolerance, with no rounding rule 8 sees (torch at fp16 runs the same float32 reference).
    An accuracy finding (within ACCURACY_ULPS of a 16-bit output), not a kernel-bug."""
    import fuzzkern
    from fuzzkern.case.model import Case

    ins = fuzzkern.materialize(Case.from_json(_FUSED_ADD_RMSNORM_CASE))
    _, c = judge(_fused_add_rmsnorm(**ins), _fp32_reference, ins, dims={"M": 1, "N": 7})
    assert not c.ok and c.accuracy, c.summary()
    assert c.condition["error_ulp"] == 2.0


def test_a_wrong_fp16_output_by_more_than_a_few_ulps_stays_a_kernel_bug():
    import fuzzkern
    from fuzzkern.case.model import Case

    ins = fuzzkern.materialize(Case.from_json(_FUSED_ADD_RMSNORM_CASE))
    h, y = _fused_add_rmsnorm(**ins)
    y = y.clone()
    y[0, 3] = (y[0, 3].double() * (1 + 2**-6)).half()  # 8-16 ulps: a wrong scale, not rounding
    _, c = judge((h, y), _fp32_reference, ins, dims={"M": 1, "N": 7})
    assert not c.ok and not c.accuracy, c.summary()
