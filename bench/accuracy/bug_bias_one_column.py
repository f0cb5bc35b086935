"""Small bug: a linear layer ``x @ W + b`` whose bias epilogue misses the last column.

The tutorial matmul (fp16/bf16, fp32 accumulator) with a fused bias: the bias is loaded with
``mask=offs_n < N - 1`` (an off-by-one copied from an exclusive bound), so column ``N - 1``
gets no bias. One column of one vector: a small-valued bias against large products is within
a loose rule's rtol; the rule here must still see it.

KNOWN MINIMAL CASE: M=N=K=1, bias[0] not tiny.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "bias missing in the last column (mask offs_n < N - 1)",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "N": 1, "K": 1},
    "minimal_case": "M=N=K=1, bias[0] != 0",
    "interpreter_visible": True,
}

BLOCK = 32


@triton.jit
def linear_kernel(a_ptr, w_ptr, bias_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_wk,
                  stride_wn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                  BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        offs_k = k * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn,
                    mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, w, acc)
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N - 1, other=0.0)  # BUG: N, not N - 1
    acc += bias.to(tl.float32)[None, :]
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def linear(x, weight, bias):
    M, K = x.shape
    _, N = weight.shape
    bias = bias.contiguous()
    c = torch.empty((M, N), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(M, BLOCK), triton.cdiv(N, BLOCK))
    linear_kernel[grid](x, weight, bias, c, M, N, K, x.stride(0), x.stride(1),
                        weight.stride(0), weight.stride(1), c.stride(0), c.stride(1),
                        BLOCK_SIZE_M=BLOCK, BLOCK_SIZE_N=BLOCK, BLOCK_SIZE_K=BLOCK)
    return c


target = fuzzkern.Target(
    name="accuracy.bug_bias_one_column",
    launcher=linear,
    reference=lambda x, weight, bias: x @ weight + bias,
    inputs=fks.inputs(
        x=fks.tensors(("M", "K"), dtypes=["float16", "bfloat16"], expand=True),
        weight=fks.tensors(("K", "N"), dtype_of="x", expand=True),
        bias=fks.tensors(("N",), dtype_of="x"),
    ),
    dims={"M": fks.sizes(max_value=64), "N": fks.sizes(max_value=64),
          "K": fks.sizes(max_value=256)},
)
