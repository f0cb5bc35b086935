"""Correct: the Triton tutorial's fused softmax (02-fused-softmax), fp32/fp16/bf16.

One program per row (a persistent loop over rows in the tutorial; one row per program here),
the row in one block, ``exp(x - max(x))`` with masked lanes at ``-inf``, fp32 inside, any
layout of ``x`` and every value distribution (``wide`` rows span 2**±20, ``large`` ±1024).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "fused row softmax, fp32/fp16/bf16, N <= 1024, any layout",
    "style": "Triton tutorial 02",
    "expected_verdicts": [],
}


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, input_col_stride,
                   output_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(row_start_ptr + col_offsets * input_col_stride, mask=mask,
                      other=-float("inf")).to(tl.float32)
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        tl.store(output_row_start_ptr + col_offsets,
                 softmax_output.to(output_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    n_rows, n_cols = x.shape
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    num_programs = min(n_rows, 4)
    softmax_kernel[(num_programs,)](y, x, x.stride(0), x.stride(1), y.stride(0), n_rows, n_cols,
                                    BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return y


target = fuzzkern.Target(
    name="accuracy.ok_softmax",
    launcher=softmax,
    reference=lambda x: torch.softmax(x, dim=-1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), expand=True)),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=1024)},
)
