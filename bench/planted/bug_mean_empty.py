"""Persistent row mean whose launcher divides by zero on an empty batch.

The launcher starts ``min(NUM_SMS, M)`` programs and gives each ``cdiv(M, programs)`` rows.
For an empty batch (``M == 0``, e.g. an MoE expert that received no tokens) that is
``cdiv(0, 0)``: a ``ZeroDivisionError`` in host code, where torch returns an empty result.
Real instances: ``triton_kernels`` matmul with M/N/K = 0 raising ``ZeroDivisionError``
(triton PR #10427), zero-size grids on Ascend (flagos-ai/FlagGems #5298).

KNOWN MINIMAL CASE: dims ``{"M": 0, "N": 1}``; x contiguous float32; any NUM_SMS.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "empty input: launcher divides by the number of programs (0)",
    "peers": "bug class #12",
    "real_instance": "triton PR #10427 (ZeroDivisionError for M/N/K = 0); FlagGems #5298",
    "expected_verdicts": ["error"],
    "minimal_dims": {"M": 0, "N": 1},
    "minimal_case": "M=0, N=1; x contiguous float32",
    "interpreter_visible": True,
}

BLOCK_N = 64


@triton.jit
def _row_mean_persistent(x_ptr, out_ptr, M, N, stride_xm, stride_xn, ROWS_PER_PROGRAM,
                         BLOCK_N: tl.constexpr):
    first = tl.program_id(0) * ROWS_PER_PROGRAM
    for row in range(first, tl.minimum(first + ROWS_PER_PROGRAM, M)):
        acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
        for start in range(0, N, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            acc += tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < N,
                           other=0.0).to(tl.float32)
        tl.store(out_ptr + row, tl.sum(acc, axis=0) / N)


def row_mean(x, NUM_SMS=132):
    M, N = x.shape
    out = torch.empty((M,), dtype=torch.float32, device=x.device)
    programs = min(NUM_SMS, M)
    rows_per_program = triton.cdiv(M, programs)
    _row_mean_persistent[(programs,)](x, out, M, N, x.stride(0), x.stride(1), rows_per_program,
                                      BLOCK_N=BLOCK_N)
    return out


# Finite-range inputs: a row holding values near the dtype's maximum overflows the float32
# statistics of any such kernel (torch's own included); that is the format, not the bug here.
FINITE_RANGE = fks.values(specials=["nan", "inf", "-inf", "-0.0", "subnormal", "tiny"])

target = fuzzkern.Target(
    name="planted.mean_empty",
    launcher=row_mean,
    reference=lambda x: x.mean(dim=1),
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float32", "float16"], values=FINITE_RANGE),
        NUM_SMS=st.sampled_from([1, 2, 4, 8]),
    ),
    dims={"M": fks.sizes(min_value=0, max_value=32), "N": fks.sizes(max_value=256)},
    reduction="N",
)
