"""Correct: fp8 (e4m3fn / e5m2) GEMM with per-tensor scales, DeepSeek/vLLM style.

``tl.dot`` on fp8 operands (upcast by the interpreter; native fp8 MMA with an fp32 accumulator
on GPUs with compute capability >= 8.9, such as the H100/H200), then ``acc * scale_a *
scale_b`` stored in bf16. Every value distribution of the fp8 operands (e4m3fn has no
infinity: ``max`` is 448 and a NaN special is its NaN), any layout.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "fp8 e4m3fn/e5m2 GEMM, fp32 accumulate, per-tensor scales, bf16 out",
    "style": "vLLM / DeepSeek fp8 GEMM (w8a8 fp8)",
    "gpu_note": "compiled mode needs an fp8 MMA (sm89+); the interpreter upcasts",
    "expected_verdicts": [],
}

BLOCK = 32


@triton.jit
def fp8_mm_kernel(a_ptr, b_ptr, c_ptr, scale_a, scale_b, M, N, K, stride_am, stride_ak,
                  stride_bk, stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                  BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        offs_k = k * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
        a = tl.load(a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=(offs_am[:, None] < M) & (offs_k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn,
                    mask=(offs_k[:, None] < K) & (offs_bn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    c = acc * scale_a * scale_b
    tl.store(c_ptr + offs_am[:, None] * stride_cm + offs_bn[None, :] * stride_cn,
             c.to(c_ptr.dtype.element_ty), mask=(offs_am[:, None] < M) & (offs_bn[None, :] < N))


def fp8_mm(a, b, scale_a, scale_b):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=torch.bfloat16, device=a.device)
    grid = (triton.cdiv(M, BLOCK), triton.cdiv(N, BLOCK))
    fp8_mm_kernel[grid](a, b, c, scale_a, scale_b, M, N, K, a.stride(0), a.stride(1),
                        b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_SIZE_M=BLOCK, BLOCK_SIZE_N=BLOCK, BLOCK_SIZE_K=BLOCK)
    return c


target = fuzzkern.Target(
    name="accuracy.ok_fp8_matmul",
    launcher=fp8_mm,
    reference=lambda a, b, scale_a, scale_b: (a @ b) * scale_a * scale_b,
    inputs=fks.inputs(
        a=fks.tensors(("M", "K"), dtypes=["float8_e4m3fn", "float8_e5m2"], expand=True),
        b=fks.tensors(("K", "N"), dtype_of="a", expand=True),
        scale_a=st.floats(2.0**-8, 4.0),
        scale_b=st.floats(2.0**-8, 4.0),
    ),
    dims={"M": fks.sizes(max_value=64), "N": fks.sizes(max_value=64),
          "K": fks.sizes(max_value=512)},
)
