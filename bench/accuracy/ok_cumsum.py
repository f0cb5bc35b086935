"""Correct: row-wise inclusive prefix sum with ``tl.cumsum`` (FlagGems' cumsum style).

Each program scans one row in blocks of 256: ``tl.cumsum`` inside the block plus the carried
total of the blocks before it, in fp32, stored in the input dtype. The ``j``-th output is a
sum of ``j + 1`` terms: its rounding error grows with ``j`` and with ``sum |x|``, not with the
(possibly cancelled) result. Any layout, every value distribution, fp32/fp16/bf16.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "row cumsum (tl.cumsum + carried block total), N <= 2048",
    "style": "FlagGems cumsum",
    "expected_verdicts": [],
}


@triton.jit
def cumsum_kernel(inp, out, N, stride_m, stride_n, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    carry = tl.zeros([1], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        x = tl.load(inp + row * stride_m + cols * stride_n, mask=mask, other=0.).to(tl.float32)
        y = tl.cumsum(x, axis=0) + carry
        tl.store(out + row * N + cols, y.to(out.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


def cumsum(x):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    cumsum_kernel[(M,)](x, y, N, x.stride(0), x.stride(1), BLOCK_SIZE=256)
    return y


target = fuzzkern.Target(
    name="accuracy.ok_cumsum",
    launcher=cumsum,
    reference=lambda x: torch.cumsum(x, dim=1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), expand=True)),
    dims={"M": fks.sizes(max_value=8), "N": fks.sizes(max_value=2048)},
)
