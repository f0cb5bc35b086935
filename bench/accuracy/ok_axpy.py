"""Correct: ``alpha * x + y`` with a float ``alpha`` in [-4, 4], fp32 and fp16.

The first kernel a new user writes (the Triton tutorial's vector add with a scalar), fuzzed
as a new user would: ``alpha=st.floats(-4, 4)``. Where ``alpha * x`` is close to ``-y`` the
result cancels, and one rounding of the product (Python's ``alpha`` reaches the kernel as
fp32; the compiled kernel may fuse the product into an FMA) is many ulps of the result.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "axpy alpha*x + y, alpha = st.floats(-4, 4), fp32/fp16, 1-D any layout",
    "style": "Triton tutorial 01 (vector add) with a scalar",
    "expected_verdicts": [],
}


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n_elements, stride_x, stride_y,
                BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets * stride_x, mask=mask)
    y = tl.load(y_ptr + offsets * stride_y, mask=mask)
    output = alpha * x.to(tl.float32) + y.to(tl.float32)
    tl.store(out_ptr + offsets, output.to(out_ptr.dtype.element_ty), mask=mask)


def axpy(alpha, x, y):
    n = x.numel()
    out = torch.empty((n,), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(n, 256),)
    axpy_kernel[grid](x, y, out, alpha, n, x.stride(0), y.stride(0), BLOCK_SIZE=256)
    return out


target = fuzzkern.Target(
    name="accuracy.ok_axpy",
    launcher=axpy,
    reference=lambda alpha, x, y: alpha * x + y,
    inputs=fks.inputs(
        x=fks.tensors(("N",), dtypes=["float32", "float16"], expand=True),
        y=fks.tensors(("N",), dtype_of="x", expand=True),
        alpha=st.floats(-4, 4),
    ),
    dims={"N": fks.sizes(max_value=2048)},
)
