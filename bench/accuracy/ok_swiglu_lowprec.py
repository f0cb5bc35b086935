"""Correct: Liger-Kernel's SwiGLU forward, whose last product is computed in fp16/bf16.

``silu(a)`` in fp32, rounded to ``b``'s dtype, times ``b`` *in that dtype*
(``c = silu(a).cast(b.dtype) * b``, as Liger writes it): a kernel that computes in its
low-precision dtype on purpose. Two roundings to fp16/bf16 where the float64 reference has
none. Both inputs of any layout (transposed, stepped, expanded).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "SwiGLU, silu(a).to(dtype) * b computed in fp16/bf16",
    "style": "Liger-Kernel swiglu",
    "expected_verdicts": [],
}


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


@triton.jit
def _swiglu_forward_kernel(a_ptr, b_ptr, c_ptr, a_s0, a_s1, b_s0, b_s1, n_cols,
                           BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    a_row = tl.load(a_ptr + program_id * a_s0 + col_offsets * a_s1, mask=mask,
                    other=0).to(tl.float32)
    b_row = tl.load(b_ptr + program_id * b_s0 + col_offsets * b_s1, mask=mask, other=0)
    c_row = silu(a_row).cast(b_row.dtype) * b_row
    tl.store(c_ptr + program_id * n_cols + col_offsets, c_row, mask=mask)


def swiglu(a, b):
    n_rows, n_cols = a.shape
    c = torch.empty((n_rows, n_cols), dtype=a.dtype, device=a.device)
    _swiglu_forward_kernel[(n_rows,)](a, b, c, a.stride(0), a.stride(1), b.stride(0),
                                      b.stride(1), n_cols,
                                      BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return c


target = fuzzkern.Target(
    name="accuracy.ok_swiglu_lowprec",
    launcher=swiglu,
    reference=lambda a, b: torch.nn.functional.silu(a) * b,
    inputs=fks.inputs(
        a=fks.tensors(("M", "N"), dtypes=["float16", "bfloat16"], expand=True),
        b=fks.tensors(("M", "N"), dtype_of="a", expand=True),
    ),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=512)},
)
