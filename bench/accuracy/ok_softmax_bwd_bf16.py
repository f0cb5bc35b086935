"""Correct: softmax backward in the input dtype's storage, Liger-Kernel style (fp16/bf16).

``dx = y * (dy - sum(dy * y))`` per row, with ``y`` the stored forward output (rounded to the
input dtype) and the dot product accumulated in float32: where ``dy`` is nearly constant along
a row the difference cancels, and the rounding of the stored ``y`` (one ulp of bf16 is 0.4%)
becomes many output ulps. Correct arithmetic; the reference is the float64 formula.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "softmax backward dx = y*(dy - sum(dy*y)), fp16/bf16 storage, fp32 sum",
    "style": "Liger-Kernel softmax backward",
    "expected_verdicts": [],
}


@triton.jit
def _softmax_bwd(DY, Y, DX, stride_dy, stride_y, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    dy = tl.load(DY + row * stride_dy + cols, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(Y + row * stride_y + cols, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(dy * y, axis=0)
    dx = y * (dy - dot)
    tl.store(DX + row * N + cols, dx.to(DX.dtype.element_ty), mask=mask)


def softmax_backward(dy, x):
    M, N = x.shape
    y = torch.softmax(x.float(), dim=-1).to(x.dtype)  # the forward's stored output
    dy = dy.contiguous()
    dx = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _softmax_bwd[(M,)](dy, y, dx, dy.stride(0), y.stride(0), N, BLOCK=triton.next_power_of_2(N))
    return dx


def reference(dy, x):
    y = torch.softmax(x, dim=-1)
    return y * (dy - (dy * y).sum(-1, keepdim=True))


target = fuzzkern.Target(
    name="accuracy.ok_softmax_bwd_bf16",
    launcher=softmax_backward,
    reference=reference,
    inputs=fks.inputs(
        dy=fks.tensors(("M", "N"), dtypes=["bfloat16", "float16"]),
        x=fks.tensors(("M", "N"), dtype_of="dy"),
    ),
    dims={"M": fks.sizes(max_value=4), "N": fks.sizes(max_value=512)},
)
