"""Planted bug: the output comes from ``torch.empty_like(x)`` but is written as if it were
contiguous (bug class #4 in docs/architecture.md; FlagGems PR #4831).

``torch.empty_like`` keeps the strides of a dense input: for a transposed ``x`` the output is
transposed too. The buggy kernel reads ``x`` through its strides but stores element
``(row, col)`` at flat position ``row * N + col``, which in a transposed ``out`` is element
``(col, row)``'s place (for a 2x2 output), so the result comes back transposed. For inputs
with gaps (steps or starts) ``empty_like`` returns a contiguous tensor and the bug hides.

KNOWN MINIMAL CASE: dims ``{"M": 2, "N": 2}``; x transposed (permutation (1, 0), dense, no
offset); float32; values with ``|x[0, 1]| != |x[1, 0]|`` (seed 0: [[4, -4], [-2, 2]]).
A transposed x with M=1 or N=1 has the same memory order as a contiguous one.

EXPECTED VERDICT: ``kernel-bug``.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "kernel-bug"
MINIMAL_DIMS = {"M": 2, "N": 2}
MINIMAL_CASE = "M=2, N=2; x transposed (dense); float32"


@triton.jit
def square_kernel_buggy(
    x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om, stride_on, BLOCK: tl.constexpr
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    row = offs // N
    col = offs % N
    x = tl.load(x_ptr + row * stride_xm + col * stride_xn, mask=mask).to(tl.float32)
    y = (x * x).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + offs, y, mask=mask)  # BUG: should be row * stride_om + col * stride_on


@triton.jit
def square_kernel(
    x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om, stride_on, BLOCK: tl.constexpr
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    row = offs // N
    col = offs % N
    x = tl.load(x_ptr + row * stride_xm + col * stride_xn, mask=mask).to(tl.float32)
    y = (x * x).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + row * stride_om + col * stride_on, y, mask=mask)


def _launch(kernel, x, BLOCK):
    M, N = x.shape
    out = torch.empty_like(x)
    kernel[(triton.cdiv(M * N, BLOCK),)](
        x, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BLOCK=BLOCK
    )
    return out


def square_buggy(x, BLOCK=16):
    return _launch(square_kernel_buggy, x, BLOCK)


def square(x, BLOCK=16):
    return _launch(square_kernel, x, BLOCK)


def reference(x):
    return x * x


INPUTS = fks.inputs(
    x=fks.tensors(("M", "N"), dtypes=["float32", "float16"]),
    BLOCK=st.sampled_from([16, 64]),
)
DIMS = {"M": fks.sizes(max_value=32), "N": fks.sizes(max_value=32)}

buggy = fuzzkern.Target(
    name="quality.empty_like_flat.buggy", launcher=square_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
correct = fuzzkern.Target(
    name="quality.empty_like_flat.correct", launcher=square, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
