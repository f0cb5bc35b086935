"""Row max over long rows whose running maximum starts at 0 instead of ``-inf``.

Rows longer than one block are reduced in a loop: a per-lane running maximum is updated block
by block and reduced at the end. The masked loads correctly use ``other=-inf``, but the
accumulator was initialized with ``tl.zeros``, so a row whose elements are all negative comes
out as 0. Randn rows of a few dozen elements are essentially never all negative, so the usual
tests pass; rows of log-probabilities, of ``-relu(x)``, or of shifted logits are all negative
by construction. (The row max feeds cross-entropy and softmax statistics, where 0 instead of
the true max silently changes the numerics.)

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 1}``; x float32 with a negative element (the
``negative`` distribution, or a seed whose first value is negative).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "all-negative rows: max-reduction initialized with 0 instead of -inf",
    "peers": "bug class #9 (neutral elements); brief: all-negative rows",
    "real_instance": "max accumulators initialized with tl.zeros (cross-entropy/softmax stats)",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "N": 1},
    "minimal_case": "M=1, N=1; x float32, negative",
    "interpreter_visible": True,
}

BLOCK_N = 64


@triton.jit
def _row_max_kernel(x_ptr, out_ptr, N, stride_xm, stride_xn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < N,
                    other=-float("inf"))
        acc = tl.maximum(acc, x.to(tl.float32))
    tl.store(out_ptr + row, tl.max(acc, axis=0))


def row_max(x):
    M, N = x.shape
    out = torch.empty((M,), dtype=torch.float32, device=x.device)
    _row_max_kernel[(M,)](x, out, N, x.stride(0), x.stride(1), BLOCK_N=BLOCK_N)
    return out


target = fuzzkern.Target(
    name="planted.rowmax_zero_init",
    launcher=row_max,
    reference=lambda x: x.amax(dim=1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float32", "float16"])),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=256)},
)
