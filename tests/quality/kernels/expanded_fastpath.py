"""Planted bug: a stride-0 (expanded) input takes a fast path meant for unit inner strides
(bug class #5 in docs/architecture.md; FlagGems #6017, an expanded index read out of bounds).

``out = x + bias`` for 2-D tensors, where ``bias`` is typically a broadcast view such as
``b.expand(M, N)``. The launcher has a fast path for inputs whose rows are contiguous (it
passes row strides only and steps through a row with unit stride) and a general path. The
buggy launcher picks the fast path when ``stride(1) <= 1`` instead of ``== 1``, so a bias
expanded along N (stride 0) is walked with stride 1: it reads the next elements of its
storage and, for the last row, past its end.

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 2}``; x contiguous; bias expanded along N
(strides (·, 0), a one-element storage); float32; BLOCK_N=16. Lane 1 reads bias's storage at
index 1, past its end. An expansion along M (stride (0, 1)) is handled right by both paths.

EXPECTED VERDICT: ``oob``.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "oob"
MINIMAL_DIMS = {"M": 1, "N": 2}
MINIMAL_CASE = "M=1, N=2; x contiguous; bias expanded along N (stride 0); float32; BLOCK_N=16"


@triton.jit
def add_rows_kernel(x_ptr, b_ptr, out_ptr, N, stride_xm, stride_bm, stride_om,
                    BLOCK_N: tl.constexpr):
    # Fast path: every row is contiguous (unit stride along N).
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask)
    b = tl.load(b_ptr + row * stride_bm + cols, mask=mask)
    tl.store(out_ptr + row * stride_om + cols, x + b, mask=mask)


@triton.jit
def add_strided_kernel(x_ptr, b_ptr, out_ptr, N, stride_xm, stride_xn, stride_bm, stride_bn,
                       stride_om, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask)
    b = tl.load(b_ptr + row * stride_bm + cols * stride_bn, mask=mask)
    tl.store(out_ptr + row * stride_om + cols, x + b, mask=mask)


def _launch(x, bias, BLOCK_N, rows_contiguous):
    assert x.shape == bias.shape and x.dim() == 2, "Incompatible shapes"
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    grid = (M, triton.cdiv(N, BLOCK_N))
    if rows_contiguous:
        add_rows_kernel[grid](x, bias, out, N, x.stride(0), bias.stride(0), out.stride(0),
                              BLOCK_N=BLOCK_N)
    else:
        add_strided_kernel[grid](x, bias, out, N, x.stride(0), x.stride(1), bias.stride(0),
                                 bias.stride(1), out.stride(0), BLOCK_N=BLOCK_N)
    return out


def add_bias_buggy(x, bias, BLOCK_N=16):
    # BUG: "<= 1" also admits stride 0; should be "== 1"
    fast = x.stride(1) <= 1 and bias.stride(1) <= 1
    return _launch(x, bias, BLOCK_N, fast)


def add_bias(x, bias, BLOCK_N=16):
    fast = x.stride(1) == 1 and bias.stride(1) == 1
    return _launch(x, bias, BLOCK_N, fast)


def reference(x, bias):
    return x + bias


INPUTS = fks.inputs(
    x=fks.tensors(("M", "N"), dtypes=["float32", "float16"]),
    bias=fks.tensors(("M", "N"), dtype_of="x", expand=True),
    BLOCK_N=st.sampled_from([16, 32]),
)
DIMS = {"M": fks.sizes(max_value=32), "N": fks.sizes(max_value=64)}

buggy = fuzzkern.Target(
    name="quality.expanded_fastpath.buggy", launcher=add_bias_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
correct = fuzzkern.Target(
    name="quality.expanded_fastpath.correct", launcher=add_bias, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
