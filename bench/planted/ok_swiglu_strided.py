"""Correct: strided elementwise SwiGLU, ``silu(gate) * up``, for any input layout.

``gate`` and ``up`` usually come from ``h.chunk(2, dim=-1)``, strided views into one buffer;
Liger's kernels make them contiguous first (a copy per call), this one takes both strides of
each input, so transposed, stepped, offset and expanded (stride-0) views all work without a
copy. The output is a fresh contiguous tensor.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "strided elementwise (SwiGLU), transposed/stepped/offset/expanded inputs",
    "expected_verdicts": [],
}

BLOCK_M = 16
BLOCK_N = 32


@triton.jit
def _swiglu_kernel(g_ptr, u_ptr, y_ptr, M, N, stride_gm, stride_gn, stride_um, stride_un,
                   stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    g = tl.load(g_ptr + rows[:, None] * stride_gm + cols[None, :] * stride_gn, mask=mask,
                other=0.0).to(tl.float32)
    u = tl.load(u_ptr + rows[:, None] * stride_um + cols[None, :] * stride_un, mask=mask,
                other=0.0).to(tl.float32)
    y = g * tl.sigmoid(g) * u
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], y.to(y_ptr.dtype.element_ty),
             mask=mask)


def swiglu(gate, up):
    M, N = gate.shape
    y = torch.empty((M, N), dtype=gate.dtype, device=gate.device)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    _swiglu_kernel[grid](gate, up, y, M, N, gate.stride(0), gate.stride(1), up.stride(0),
                         up.stride(1), y.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return y


target = fuzzkern.Target(
    name="planted.ok_swiglu_strided",
    launcher=swiglu,
    reference=lambda gate, up: torch.nn.functional.silu(gate) * up,
    inputs=fks.inputs(
        gate=fks.tensors(("M", "N"), dtypes=["float32", "float16"], expand=True),
        up=fks.tensors(("M", "N"), dtype_of="gate", expand=True),
    ),
    dims={"M": fks.sizes(max_value=64), "N": fks.sizes(max_value=96)},
)
