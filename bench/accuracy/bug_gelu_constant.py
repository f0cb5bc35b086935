"""Small bug: tanh-GELU with ``sqrt(2/pi)`` written as ``0.7978`` (four digits).

``0.5 * x * (1 + tanh(0.7978 * (x + 0.044715 x**3)))``: the constant is 1.06e-4 relative too
small, which moves the output by up to about 3e-5 relative around |x| = 1..2 (about 250 fp32
ulps): invisible under ``rtol=1e-2`` and in fp16/bf16 outputs, a plain kernel bug in fp32.

KNOWN MINIMAL CASE: M=1, N=1, float32, x of order 1.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "tanh-GELU with a truncated constant (0.7978 for sqrt(2/pi))",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "N": 1},
    "minimal_case": "M=N=1, float32, x of order 1",
    "interpreter_visible": True,
}


@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n_cols, stride_m, stride_n, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_m + cols * stride_n, mask=mask).to(tl.float32)
    inner = 0.7978 * (x + 0.044715 * x * x * x)  # BUG: sqrt(2/pi) = 0.7978845608...
    y = x * tl.sigmoid(2 * inner)  # 0.5 * (1 + tanh(u)) == sigmoid(2u)
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def gelu_tanh(x):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    gelu_tanh_kernel[(M, triton.cdiv(N, 256))](x, y, N, x.stride(0), x.stride(1),
                                               BLOCK_SIZE=256)
    return y


target = fuzzkern.Target(
    name="accuracy.bug_gelu_constant",
    launcher=gelu_tanh,
    reference=lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), expand=True)),
    dims={"M": fks.sizes(max_value=8), "N": fks.sizes(max_value=1024)},
)
