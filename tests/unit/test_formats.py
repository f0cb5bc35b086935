"""bf16 and fp8 as the user gave them (fuzzkern/execution/interpreter/formats.py): host code sees
the dtypes
of the case, the interpreter computes on exact values and rounds each result as compiled."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.case.model import Case, TensorCase
from fuzzkern.execution.interpreter.core import interpreter_mode
from fuzzkern.execution.runner import run_case
from tests.unit.targets.shadow_kernels import softmax_backward, softmax_backward_reference


@triton.jit
def _fma_kernel(x, y, out, wide, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    a = tl.load(x + i, mask=m, other=0.0)
    b = tl.load(y + i, mask=m, other=0.0)
    tl.store(out + i, a * b + a, mask=m)  # two ops in the input dtype, each rounded
    tl.store(wide + i, a.to(tl.float32) * b.to(tl.float32), mask=m)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_arithmetic_rounds_each_op_as_torch_does(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(37, generator=g).to(dtype)
    y = torch.randn(37, generator=g).to(dtype)
    out, wide = torch.empty_like(x), torch.empty(37)
    with interpreter_mode():
        _fma_kernel[(1,)](x, y, out, wide, 37, BLOCK=64)
    assert out.dtype == dtype
    assert torch.equal(out, x * y + x)  # torch rounds per op too: bit for bit
    assert torch.equal(wide, x.float() * y.float())
    # the raw-bits arithmetic of Triton's own interpreter would be far off
    assert not torch.equal(out.float(), x.float() * y.float() + x.float())


@triton.jit
def _to_fp8(x, out, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    tl.store(out + i, tl.load(x + i, mask=m).to(tl.float8e4nv), mask=m)


def test_fp8_casts_round_to_nearest_and_saturate():
    x = torch.tensor([0.1, 1.0, 3.3, 500.0, -1e4, float("inf"), float("nan"), 2.0 ** -10])
    out = torch.empty(8, dtype=torch.float8_e4m3fn)
    with interpreter_mode():
        _to_fp8[(1,)](x, out, 8, BLOCK=8)
    got = out.float()
    assert got[:3].tolist() == x[:3].to(torch.float8_e4m3fn).float().tolist()
    assert got[3:6].tolist() == [448.0, -448.0, 448.0]  # satfinite: the largest finite
    assert torch.isnan(got[6])
    assert got[7] == 0.0  # 2**-10: half the smallest subnormal, a tie, rounds to even


@triton.jit
def _dot_kernel(a, b, out, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    idx = r[:, None] * BLOCK + r[None, :]
    tl.store(out + idx, tl.dot(tl.load(a + idx), tl.load(b + idx)))


def test_bf16_dot_multiplies_values_not_bit_patterns():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(16, 16, generator=g).to(torch.bfloat16)
    b = torch.randn(16, 16, generator=g).to(torch.bfloat16)
    out = torch.empty(16, 16)
    with interpreter_mode():
        _dot_kernel[(1,)](a, b, out, BLOCK=16)
    assert torch.allclose(out, a.float() @ b.float(), rtol=1e-5, atol=1e-5)


@triton.jit
def _scale_kernel(x, out, n, s, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out + i, tl.load(x + i, mask=m) * s, mask=m)


def _bf16_only(x):
    """A launcher that checks the dtype as a library's host code does."""
    if x.dtype != torch.bfloat16:
        raise TypeError(f"does not support {x.dtype}. Please use bfloat16.")
    out = torch.empty_like(x)
    assert out.dtype == torch.bfloat16
    _scale_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), 3.0, BLOCK=64)
    return out


def _tripled(launcher):
    """``launcher``'s outcome on 70 bf16 elements, against ``3 * x``."""
    target = fuzzkern.Target(launcher=launcher, reference=lambda x: x * 3,
                             inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["bfloat16"])),
                             dims={"N": fks.sizes(max_value=100)})
    case = Case({"N": 70}, {"x": TensorCase.build((70,), "bfloat16")})
    return run_case(target, case, {"modes": ["interpret"]})


def test_host_code_sees_the_bf16_tensor_and_the_case_passes():
    outcome = _tripled(_bf16_only)
    assert outcome.verdict == "pass", outcome.message
    assert "substituted" not in outcome.to_json()["modes"]["interpret"]["detail"]


def test_a_wrong_bf16_kernel_is_still_found():
    def launcher(x):
        out = torch.empty_like(x)
        _scale_kernel[(1,)](x, out, x.numel(), 3.0, BLOCK=64)  # one block: no more
        return out

    outcome = _tripled(launcher)
    assert outcome.verdict == "unwritten-output", outcome.message


#: a drawn case of bench/accuracy/ok_softmax_bwd_bf16.py: large logits (a softmax that
#: underflows to 0 in bf16 where float32 and float64 keep tiny values) and ±inf in dy
_UNDERFLOW_CASE = {
    "version": 1, "dims": {"M": 4, "N": 181}, "inputs": {
        "dy": {"tensor": {
            "shape": [4, 181], "dtype": "bfloat16", "strides": [183, 1], "storage_offset": 7,
            "storage_size": 737, "values": {"seed": 970, "distribution": "large",
                                            "specials": [[431, "inf"], [116, "-inf"]]},
            "layout": {"permutation": [0, 1], "steps": [1, 1], "starts": [0, 2], "offset": 5,
                       "expanded": []}}},
        "x": {"tensor": {
            "shape": [4, 181], "dtype": "bfloat16", "strides": [181, 1], "storage_offset": 0,
            "storage_size": 724, "values": {"seed": 63098, "distribution": "large",
                                            "specials": []},
            "layout": {"permutation": [0, 1], "steps": [1, 1], "starts": [0, 0], "offset": 0,
                       "expanded": []}}}},
    "configs": {}}


def test_host_rounding_to_zero_times_inf_is_not_a_kernel_bug():
    """A softmax of -100 is 3.7e-44 in float32 and 0 in bf16 (the host's rounding), so with an
    inf in dy the kernel computes 0 * -inf = NaN where the float64 reference has -inf: the
    range of a host-made value. The shadow runs that host code at float64 too, so it judges
    the whole output: rounding (accuracy), from the launcher's own cast to bf16."""
    dy = torch.tensor([[float("inf"), 1.0, 2.0, -1.0]], dtype=torch.bfloat16)
    x = torch.tensor([[0.0, -100.0, -1.0, -2.0]], dtype=torch.bfloat16)
    with interpreter_mode():
        got = softmax_backward(dy, x)
    assert torch.isnan(got[0, 1]) and torch.isinf(got[0, 2])
    assert torch.isinf(softmax_backward_reference(dy.double(), x.double())[0, 1])

    target = fuzzkern.Target(
        launcher=softmax_backward, reference=softmax_backward_reference,
        inputs=fks.inputs(dy=fks.tensors(("M", "N"), dtypes=["bfloat16"]),
                          x=fks.tensors(("M", "N"), dtype_of="dy")),
        dims={"M": fks.sizes(max_value=4), "N": fks.sizes(max_value=512)})
    outcome = run_case(target, Case.from_json(_UNDERFLOW_CASE), {"modes": ["interpret"]})
    assert outcome.verdict == "accuracy", outcome.message
    # host code runs at float64 in the shadow: its own rounding to bf16 is the root line
    assert "most from line shadow_kernels.py:175 `y = torch.softmax(x.float(), dim=-1)" \
        ".to(x.dtype)`: rounds to bf16" in outcome.message


# -- low-precision reductions as compiled code rounds them (issue 40) ------------------------


@triton.jit
def _sums(x, total, rows, cols, scan, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    v = tl.load(x + offs)
    tl.store(total, tl.sum(tl.sum(v, axis=1), axis=0))
    tl.store(rows + tl.arange(0, R), tl.sum(v, axis=1))
    tl.store(cols + tl.arange(0, C), tl.sum(v, axis=0))
    tl.store(scan + offs, tl.cumsum(v, axis=1))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_narrow_sums_round_their_partial_sums_in_their_dtype(dtype):
    """tl.sum of fp16/bf16 keeps the sum in that dtype (Triton's _pick_sum_dtype), so the
    partial sums round there along the compiled tree; rounded once it would be more exact."""
    import numpy as np

    from fuzzkern.execution.interpreter import formats

    g = torch.Generator().manual_seed(0)
    x = (torch.rand(4, 1024, generator=g) + 0.5).to(dtype)
    total, rows = torch.zeros(1, dtype=dtype), torch.zeros(4, dtype=dtype)
    cols, scan = torch.zeros(1024, dtype=dtype), torch.zeros(4, 1024, dtype=dtype)
    with interpreter_mode():
        _sums[(1,)](x, total, rows, cols, scan, R=4, C=1024)
    kind = formats.TL_OF[dtype]
    wide = x.double().numpy()
    want_rows = formats.tree_sum(wide, 1, kind)
    assert torch.equal(rows, torch.from_numpy(want_rows).to(dtype))
    assert torch.equal(cols, torch.from_numpy(formats.tree_sum(wide, 0, kind)).to(dtype))
    assert torch.equal(total, torch.from_numpy(formats.tree_sum(want_rows, 0, kind)).to(dtype)
                       .reshape(1))
    once = x.double().sum(1).to(dtype)
    assert not torch.equal(rows, once)  # the partial sums' rounding shows
    if dtype == torch.float16 or tuple(map(int, triton.__version__.split(".")[:2])) >= (3, 7):
        want = formats.ordered_cumsum(wide, 1, kind)
        assert torch.equal(scan, torch.from_numpy(want).to(dtype))
    assert np.isfinite(want_rows).all()


def test_tree_sum_is_exact_for_exact_partial_sums_and_absorbs_as_compiled():
    import numpy as np

    from fuzzkern.execution.interpreter import formats

    x = np.full(4096, 0.25)
    x[0] = 1024
    assert float(formats.tree_sum(x, 0, tl.float16)) == 2040.0  # thread 0 absorbs its 0.25s
    assert float(formats.rounded(np.array([x.sum()]), tl.float16)[0]) == 2048.0
    assert float(formats.tree_sum(np.ones(4096), None, tl.float16)) == 4096.0
