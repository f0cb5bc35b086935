"""Correct: SiLU forward as Liger-Kernel and FlagGems write it, ``x * sigmoid(x)``.

``tl.sigmoid`` on fp32 (fp16/bf16 inputs upcast), stored in the input dtype. Large negative
inputs make ``sigmoid`` underflow: ``silu(-95)`` is ``-5e-40`` in float64 and a subnormal or 0
in float32, as in torch. Any layout, every value distribution.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "SiLU x*sigmoid(x), fp32/fp16/bf16, any layout",
    "style": "Liger-Kernel / FlagGems",
    "expected_verdicts": [],
}


@triton.jit
def silu_kernel(x_ptr, y_ptr, n_cols, stride_m, stride_n, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_m + cols * stride_n, mask=mask).to(tl.float32)
    y = x * tl.sigmoid(x)
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def silu(x):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    silu_kernel[(M, triton.cdiv(N, 512))](x, y, N, x.stride(0), x.stride(1), BLOCK_SIZE=512)
    return y


target = fuzzkern.Target(
    name="accuracy.ok_silu",
    launcher=silu,
    reference=lambda x: torch.nn.functional.silu(x),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), expand=True)),
    dims={"M": fks.sizes(max_value=8), "N": fks.sizes(max_value=1024)},
)
