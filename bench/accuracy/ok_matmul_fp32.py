"""Correct: the Triton tutorial's matmul (03-matrix-multiplication) on float32, IEEE dots.

``input_precision="ieee"``: a float32 matmul that means float32 (TF32 is a different,
documented precision). 32x32x32 tiles in grouped program order, fp32 accumulator, masked K
tail, any layout of either operand. Nothing tells fuzzkern that ``K`` is a reduction. With
the ``large`` and ``wide`` distributions the terms are large and of mixed sign and the result
can be small: the error scales with ``sum |a||b|``, not ``|c|``.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "fp32 tiled matmul (IEEE dot, no TF32), K <= 512, any layout, no reduction=",
    "style": "Triton tutorial 03",
    "expected_verdicts": [],
}

BLOCK_M = BLOCK_N = BLOCK_K = 32
GROUP_M = 4


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        k_left = K - k * BLOCK_SIZE_K
        a = tl.load(a_ptrs, mask=(offs_am[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_bn[None, :] < N), other=0.0)
        accumulator = tl.dot(a, b, accumulator, input_precision="ieee")
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def matmul(a, b):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_SIZE_M=BLOCK_M, BLOCK_SIZE_N=BLOCK_N,
                        BLOCK_SIZE_K=BLOCK_K, GROUP_SIZE_M=GROUP_M)
    return c


target = fuzzkern.Target(
    name="accuracy.ok_matmul_fp32",
    launcher=matmul,
    reference=lambda a, b: a @ b,
    inputs=fks.inputs(
        a=fks.tensors(("M", "K"), dtypes=["float32"], expand=True),
        b=fks.tensors(("K", "N"), dtype_of="a", expand=True),
    ),
    dims={"M": fks.sizes(max_value=64), "N": fks.sizes(max_value=64),
          "K": fks.sizes(max_value=512)},
)
