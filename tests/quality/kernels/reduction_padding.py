"""Planted bug: padding lanes pollute a reduction (bug class #1 in docs/architecture.md; the
Liger-Kernel LayerNorm variance bug, linkedin/Liger-Kernel#518).

A row's variance is computed in one block of ``BLOCK_N = next_power_of_2(N)`` lanes. Masked
lanes load 0, which is harmless for the mean, but the buggy kernel then squares ``x - mean``
on every lane, so each padding lane adds ``mean**2``: the result is off by
``mean**2 * (BLOCK_N - N) / N`` whenever N is not a power of two and the row mean is not 0.

Inputs are float16 and the kernel computes in float32: squares of float16 values cannot
overflow float32, so the correct twin matches the float64 reference for every input drawn
(with float32 inputs, two ``max`` specials in one row overflow the float32 mean to inf and
even a correct kernel returns inf for a variance of 0).

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 3}`` (BLOCK_N=4, one padding lane); x contiguous
float16 with a non-zero row mean (seed 0's small ints, [4, -4, -2], have mean -2/3). N=1
and N=2 are powers of two, so they have no padding lane.

EXPECTED VERDICT: ``kernel-bug``.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "kernel-bug"
MINIMAL_DIMS = {"M": 1, "N": 3}
MINIMAL_CASE = "M=1, N=3; x contiguous float16 with a non-zero row mean"


@triton.jit
def row_var_kernel_buggy(x_ptr, out_ptr, N, stride_m, stride_n, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_m + cols * stride_n, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    diff = x - mean  # BUG: padding lanes hold -mean; should be tl.where(mask, x - mean, 0.0)
    tl.store(out_ptr + row, tl.sum(diff * diff, axis=0) / N)


@triton.jit
def row_var_kernel(x_ptr, out_ptr, N, stride_m, stride_n, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_m + cols * stride_n, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    diff = tl.where(mask, x - mean, 0.0)
    tl.store(out_ptr + row, tl.sum(diff * diff, axis=0) / N)


def _launch(kernel, x):
    M, N = x.shape
    out = torch.empty((M,), dtype=torch.float32, device=x.device)
    kernel[(M,)](x, out, N, x.stride(0), x.stride(1), BLOCK_N=triton.next_power_of_2(N))
    return out


def row_var_buggy(x):
    return _launch(row_var_kernel_buggy, x)


def row_var(x):
    return _launch(row_var_kernel, x)


def reference(x):
    return x.var(dim=1, unbiased=False)


INPUTS = fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float16"]))
DIMS = {"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=64)}

buggy = fuzzkern.Target(
    name="quality.reduction_padding.buggy", launcher=row_var_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS, reduction="N",
)
correct = fuzzkern.Target(
    name="quality.reduction_padding.correct", launcher=row_var, reference=reference,
    inputs=INPUTS, dims=DIMS, reduction="N",
)
