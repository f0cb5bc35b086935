"""Correct: fp16 matmul with float32 accumulation, K up to 320.

The classic tiled matmul (32x32x32 tiles, grouped program order, masked K tail) on fp16
operands of any layout (transposed, strided, offset, expanded). ``reduction="K"`` scales the
tolerance with the length of the dot products: a K of a few hundred in fp16 must never be
reported. M and N stay small so a case costs tens of milliseconds in the interpreter.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "fp16 matmul, fp32 accumulate, 32x32x32 tiles, K <= 320, any layout",
    "expected_verdicts": [],
}

BLOCK_M = BLOCK_N = BLOCK_K = 32
GROUP_M = 2


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                   stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    _matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                         c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                         BLOCK_K=BLOCK_K, GROUP_M=GROUP_M)
    return c


target = fuzzkern.Target(
    name="planted.ok_matmul_fp16",
    launcher=matmul,
    reference=lambda a, b: a @ b,
    inputs=fks.inputs(
        a=fks.tensors(("M", "K"), dtypes=["float16"], expand=True),
        b=fks.tensors(("K", "N"), dtype_of="a", expand=True),
    ),
    dims={"M": fks.sizes(max_value=64), "N": fks.sizes(max_value=64),
          "K": fks.sizes(max_value=320)},
    reduction="K",
)
