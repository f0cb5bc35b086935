"""Row max kernels whose smaller cases the post-shrink minimizer must not accept.

The kernel is bench/planted/bug_rowmax_zero_init.py's (the running maximum starts at 0, so an
all-negative row comes out as 0); the launchers refuse one-row inputs, so that for a case that
fails in row 1 of two rows, every one-row candidate is rejected: by a declared precondition
(``two_rows``) or by an error of another verdict family (``errors_on_one_row``).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

BLOCK_N = 64


@triton.jit
def _row_max_kernel(x_ptr, out_ptr, N, stride_xm, stride_xn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)  # BUG: 0 instead of -inf
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < N,
                    other=-float("inf"))
        acc = tl.maximum(acc, x.to(tl.float32))
    tl.store(out_ptr + row, tl.max(acc, axis=0))


def _row_max(x):
    M, N = x.shape
    out = torch.empty((M,), dtype=torch.float32, device=x.device)
    _row_max_kernel[(M,)](x, out, N, x.stride(0), x.stride(1), BLOCK_N=BLOCK_N)
    return out


def row_max_two_rows(x):
    if x.shape[0] < 2:
        raise ValueError("row_max_two_rows needs at least 2 rows")
    return _row_max(x)


def row_max_errors_on_one_row(x):
    if x.shape[0] < 2:
        raise RuntimeError("one row is not supported")
    return _row_max(x)


INPUTS = fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float32"]))
DIMS = {"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=256)}

two_rows = fuzzkern.Target(
    launcher=row_max_two_rows, reference=lambda x: x.amax(dim=1), inputs=INPUTS, dims=DIMS,
    preconditions=(ValueError,),
)

errors_on_one_row = fuzzkern.Target(
    launcher=row_max_errors_on_one_row, reference=lambda x: x.amax(dim=1), inputs=INPUTS,
    dims=DIMS,
)
