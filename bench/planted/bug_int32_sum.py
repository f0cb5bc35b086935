"""Integer row sum that accumulates in int32 and overflows.

``torch.sum`` of an int32 tensor returns int64, so the kernel's output is int64; but the
kernel reduces with ``tl.sum`` on the int32 values it loaded, which keeps int32, and only the
final store widens the already wrapped sum. Sums of token counts, lengths or offsets wrap once
they pass 2**31 - 1. This is the int32-overflow class (bug class #7, docs/architecture.md) in the
form the interpreter can show: int32 *offset* overflow (``pid * stride`` on tensors of more than
2**31 elements, Liger #1296, megablocks PR #185) needs > 8 GiB tensors or Triton's debug-mode
overflow check (tests/quality/kernels/int32_index.py covers that one), so it is GPU/debug only.

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 2}``; x contiguous int32 with two values whose sum
leaves the int32 range (the ``extreme`` or ``uniform`` distribution, or ``max`` specials). A
one-element row cannot overflow.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "int32 overflow: int32 accumulator for an int64 result",
    "peers": "bug class #7 (int32 overflow; the offset form is GPU/debug-only)",
    "real_instance": "torch promotes integer sums to int64; int32 accumulators wrap",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "N": 2},
    "minimal_case": "M=1, N=2; x int32 with values whose sum exceeds 2**31-1",
    "interpreter_visible": True,
}


@triton.jit
def _row_sum_int_kernel(x_ptr, out_ptr, N, stride_xm, stride_xn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < N, other=0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def row_sum_int(x):
    M, N = x.shape
    out = torch.empty((M,), dtype=torch.int64, device=x.device)
    _row_sum_int_kernel[(M,)](x, out, N, x.stride(0), x.stride(1),
                              BLOCK_N=triton.next_power_of_2(N))
    return out


target = fuzzkern.Target(
    name="planted.int32_sum",
    launcher=row_sum_int,
    reference=lambda x: x.sum(dim=1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["int32"])),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=128)},
)
