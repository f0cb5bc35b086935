"""Correct: numerically stable row softmax (max-subtracted), for large inputs.

The fused-softmax tutorial's kernel with both strides honoured: one program per row, the row
in one block, ``exp(x - max(x))`` so nothing overflows, masked lanes at ``-inf``. Values include
the ``large`` (magnitudes up to 1024) and ``wide`` (up to 2**20) distributions and special
values; the output must match torch's softmax within the default tolerance of its dtype.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "stable softmax (max-subtracted) with large inputs, any layout",
    "expected_verdicts": [],
}


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, N, stride_xm, stride_xn, stride_ym, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask,
                other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _softmax_kernel[(M,)](x, y, N, x.stride(0), x.stride(1), y.stride(0),
                          BLOCK_N=triton.next_power_of_2(N))
    return y


target = fuzzkern.Target(
    name="planted.ok_softmax_stable",
    launcher=softmax,
    reference=lambda x: torch.softmax(x, dim=1),
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float32", "float16"], expand=True),
    ),
    dims={"M": fks.sizes(max_value=8), "N": fks.sizes(max_value=1024)},
)
