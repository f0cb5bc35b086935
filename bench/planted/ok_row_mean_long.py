"""Correct: row mean over long rows (N up to 2048), accumulated in float32.

Each program reduces one row in chunks of ``BLOCK_N`` lanes: a per-lane float32 running sum,
then ``tl.sum`` across lanes. Inputs come in every layout fuzzkern draws (strided, offset,
expanded) and with values of wide magnitude (up to 2**20 times randn), so the kernel's
rounding differs from the float64 reference; ``reduction="N"`` gives the tolerance the
classic error bound of a length-N float32 sum, and the kernel must never be reported.

Inputs are finite-range by declaration: a float32 or bfloat16 row holding two values near the
dtype's maximum overflows any float32 accumulator (torch's own float32 sum included), which is
a property of the format, not a kernel bug; so ``max``/``lowest`` specials are left out.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "long fp32 reduction (row mean, N <= 2048, wide-magnitude values, any layout)",
    "expected_verdicts": [],
}

BLOCK_N = 256


@triton.jit
def _row_mean_kernel(x_ptr, out_ptr, N, stride_xm, stride_xn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < N, other=0.0)
        acc += x.to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    tl.store(out_ptr + row, mean.to(out_ptr.dtype.element_ty))


def row_mean(x):
    M, N = x.shape
    out = torch.empty((M,), dtype=x.dtype, device=x.device)
    _row_mean_kernel[(M,)](x, out, N, x.stride(0), x.stride(1), BLOCK_N=BLOCK_N)
    return out


FINITE_RANGE = fks.values(specials=["nan", "inf", "-inf", "-0.0", "subnormal", "tiny"])

target = fuzzkern.Target(
    name="planted.ok_row_mean_long",
    launcher=row_mean,
    reference=lambda x: x.mean(dim=1),
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float32", "float16", "bfloat16"], expand=True,
                      values=FINITE_RANGE),
    ),
    dims={"M": fks.sizes(max_value=8), "N": fks.sizes(max_value=2048)},
    reduction="N",
)
