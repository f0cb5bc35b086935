"""Small bug: a row sum over N = 4096 whose tail loop starts one element early.

Full blocks of 1024 are summed in a loop, then a tail block picks up ``n_full .. N-1``; the
tail's start is written ``n_full - 1``, so ``x[n_full - 1]`` is added twice (with N = 4096
the tail holds exactly that one element). fp32 accumulation, fp32/fp16/bf16 input, fp32 out.
One doubled term among 4096 is within a loose ``rtol=1e-2`` of most rows' sums, and within
the worst-case bound ``N * u * sum |x|``; the probabilistic bound is 64x tighter.

KNOWN MINIMAL CASE: M=1, N=4096, x[4095] not tiny.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "one doubled term in an N=4096 row sum (tail loop starts at n_full - 1)",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "N": 4096},
    "minimal_case": "M=1, N=4096, x[0, 4095] not tiny",
    "interpreter_visible": True,
}

BLOCK = 1024


@triton.jit
def row_sum_kernel(x_ptr, y_ptr, N, stride_m, stride_n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    n_full = (N // BLOCK) * BLOCK
    for off in range(0, n_full, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride_m + cols * stride_n).to(tl.float32)
    cols = n_full - 1 + tl.arange(0, BLOCK)  # BUG: the tail starts at n_full
    tail = tl.load(x_ptr + row * stride_m + cols * stride_n, mask=cols < N, other=0.0)
    acc += tail.to(tl.float32)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


def row_sum(x):
    M, N = x.shape
    y = torch.empty((M,), dtype=torch.float32, device=x.device)
    row_sum_kernel[(M,)](x, y, N, x.stride(0), x.stride(1), BLOCK=BLOCK)
    return y


target = fuzzkern.Target(
    name="accuracy.bug_sum_doubled_term",
    launcher=row_sum,
    reference=lambda x: x.sum(dim=1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), expand=True)),
    dims={"M": fks.sizes(max_value=4), "N": st.just(4096)},
)
