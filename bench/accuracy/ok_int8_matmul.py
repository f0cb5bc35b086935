"""Correct: W8A8 int8 GEMM with per-row and per-column scales (vLLM / FlagGems style).

``int8 x int8 -> int32`` with ``tl.dot(..., out_dtype=tl.int32)`` (exact), then dequantized:
``out = acc * scale_a[m] * scale_b[n]`` in fp32, stored as fp16, bf16 or fp32 (``out_dtype``).
Every integer distribution of the operands (``extreme``: -128/127 everywhere, so the int32
sums are as large as they get) and every float distribution of the scales; any layout.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "int8 x int8 -> int32 dot, per-token/per-channel fp32 scales, fp16/bf16/fp32 out",
    "style": "vLLM triton_scaled_mm / FlagGems w8a8",
    "expected_verdicts": [],
}

BLOCK = 32


@triton.jit
def scaled_mm_kernel(a_ptr, b_ptr, scale_a_ptr, scale_b_ptr, c_ptr, M, N, K, stride_am,
                     stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                     BLOCK_SIZE_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.int32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        offs_k = k * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
        a = tl.load(a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=(offs_am[:, None] < M) & (offs_k[None, :] < K), other=0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn,
                    mask=(offs_k[:, None] < K) & (offs_bn[None, :] < N), other=0)
        accumulator = tl.dot(a, b, accumulator, out_dtype=tl.int32)
    scale_a = tl.load(scale_a_ptr + offs_am, mask=offs_am < M, other=0.0)
    scale_b = tl.load(scale_b_ptr + offs_bn, mask=offs_bn < N, other=0.0)
    c = accumulator.to(tl.float32) * scale_a[:, None] * scale_b[None, :]
    tl.store(c_ptr + offs_am[:, None] * stride_cm + offs_bn[None, :] * stride_cn,
             c.to(c_ptr.dtype.element_ty), mask=(offs_am[:, None] < M) & (offs_bn[None, :] < N))


def scaled_mm(a, b, scale_a, scale_b, out_dtype="float16"):
    M, K = a.shape
    _, N = b.shape
    scale_a, scale_b = scale_a.contiguous(), scale_b.contiguous()
    c = torch.empty((M, N), dtype=getattr(torch, out_dtype), device=a.device)
    grid = (triton.cdiv(M, BLOCK), triton.cdiv(N, BLOCK))
    scaled_mm_kernel[grid](a, b, scale_a, scale_b, c, M, N, K, a.stride(0), a.stride(1),
                           b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                           BLOCK_SIZE_M=BLOCK, BLOCK_SIZE_N=BLOCK, BLOCK_SIZE_K=BLOCK)
    return c


def reference(a, b, scale_a, scale_b):
    # vLLM's test reference: the int8 operands in the scales' float dtype, exact for K <= 512
    acc = a.to(scale_a.dtype) @ b.to(scale_a.dtype)
    return acc * scale_a[:, None] * scale_b[None, :]


target = fuzzkern.Target(
    name="accuracy.ok_int8_matmul",
    launcher=scaled_mm,
    reference=reference,
    inputs=fks.inputs(
        a=fks.tensors(("M", "K"), dtypes=["int8"], expand=True),
        b=fks.tensors(("K", "N"), dtypes=["int8"], expand=True),
        scale_a=fks.tensors(("M",), dtypes=["float32"]),
        scale_b=fks.tensors(("N",), dtypes=["float32"]),
        out_dtype=st.sampled_from(["float16", "bfloat16", "float32"]),
    ),
    dims={"M": fks.sizes(max_value=64), "N": fks.sizes(max_value=64),
          "K": fks.sizes(max_value=512)},
)
