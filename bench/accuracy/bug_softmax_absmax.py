"""Small bug: a softmax that subtracts ``max(|x|)`` instead of ``max(x)``.

Softmax is shift-invariant, so any shift is "correct" in exact arithmetic, and for rows whose
largest magnitude is positive the two shifts agree. For a row such as ``[-300, 1]`` the kernel
computes ``exp(x - 300)``: every numerator underflows (``exp(-299)`` is 0 in fp32) and the row
is ``0/0 = NaN``, or, for milder rows, the numerators lose their bits to the subnormal range.
A loose rule misses the mild cases; NaN is caught by any rule.

KNOWN MINIMAL CASE: M=N=1, ``x = [-L]`` with ``L >= 52`` (``large``): ``max|x| = L`` and
``exp(-2L)`` underflows to 0 in fp32, so the row is ``0/0 = NaN``.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "softmax shifted by max|x| instead of max x",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "N": 1},
    "minimal_case": "M=N=1, x = [-L] with L >= 52: exp(-2L) underflows, 0/0 = NaN",
    "interpreter_visible": True,
}


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, input_col_stride,
                   output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    row = tl.load(input_ptr + row_idx * input_row_stride + col_offsets * input_col_stride,
                  mask=mask, other=0.0).to(tl.float32)
    row_max = tl.max(tl.abs(row), axis=0)  # BUG: max |x|, not max x
    numerator = tl.where(mask, tl.exp(row - row_max), 0.0)
    denominator = tl.sum(numerator, axis=0)
    tl.store(output_ptr + row_idx * output_row_stride + col_offsets,
             (numerator / denominator).to(output_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    n_rows, n_cols = x.shape
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    softmax_kernel[(n_rows,)](y, x, x.stride(0), x.stride(1), y.stride(0), n_cols,
                              BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return y


target = fuzzkern.Target(
    name="accuracy.bug_softmax_absmax",
    launcher=softmax,
    reference=lambda x: torch.softmax(x, dim=-1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), expand=True)),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=1024)},
)
