"""Correct: GELU, exact (erf) and tanh forms, as attorch writes them.

``approximate="none"``: ``0.5 * x * (1 + erf(x / sqrt(2)))``; ``"tanh"``:
``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))`` with attorch's
``tanh(x) = 2 * sigmoid(2x) - 1``. Both lose relative accuracy where ``1 + erf`` or
``1 + tanh`` cancels (x around -5 and below), exactly as torch at the same precision does.
fp32, fp16, bf16; any layout (2-D, the rows flattened by strides).
"""

import math

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "GELU erf and tanh forms (tanh = 2*sigmoid(2x)-1), fp32/fp16/bf16",
    "style": "attorch act_kernels",
    "expected_verdicts": [],
}


@triton.jit
def tanh(input):
    return 2 * tl.sigmoid(2 * input) - 1


@triton.jit
def gelu(input, APPROXIMATE: tl.constexpr):
    if APPROXIMATE:
        cdf = 0.5 * (1 + tanh(0.7978845608028654 * (input + 0.044715 * input * input * input)))
    else:
        cdf = 0.5 * (1 + tl.math.erf(0.7071067811865476 * input))
    return cdf * input


@triton.jit
def act_func_forward_kernel(input_pointer, output_pointer, n_cols, stride_m, stride_n,
                            APPROXIMATE: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(input_pointer + row * stride_m + cols * stride_n, mask=mask).to(tl.float32)
    y = gelu(x, APPROXIMATE)
    tl.store(output_pointer + row * n_cols + cols, y.to(output_pointer.dtype.element_ty),
             mask=mask)


def gelu_forward(x, approximate="none"):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    act_func_forward_kernel[(M, triton.cdiv(N, 256))](x, y, N, x.stride(0), x.stride(1),
                                                      APPROXIMATE=approximate == "tanh",
                                                      BLOCK_SIZE=256)
    return y


assert abs(0.7978845608028654 - math.sqrt(2 / math.pi)) < 1e-16

target = fuzzkern.Target(
    name="accuracy.ok_gelu",
    launcher=gelu_forward,
    reference=lambda x, approximate: torch.nn.functional.gelu(x, approximate=approximate),
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), expand=True),
        approximate=st.sampled_from(["none", "tanh"]),
    ),
    dims={"M": fks.sizes(max_value=8), "N": fks.sizes(max_value=1024)},
)
