"""Correct: a persistent matmul (Triton tutorial 09-persistent-matmul style), no reduction hint.

A fixed number of programs (the SM count on a GPU, 4 in the interpreter) walks the output
tiles in grouped order, ``for tile_id in range(start_pid, num_tiles, NUM_SMS)``, each with an
fp32 accumulator over the masked K loop. fp16, bf16 and fp32 (IEEE dots) operands of any
layout; terms large and of mixed sign in the ``large``/``wide`` distributions.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "persistent matmul, fp16/bf16/fp32, K <= 384, any layout, no reduction=",
    "style": "Triton tutorial 09",
    "expected_verdicts": [],
}


@triton.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def matmul_kernel_persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                             stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                             BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                             GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr,
                             IEEE: tl.constexpr):
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in range(start_pid, num_tiles, NUM_SMS):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
            a = tl.load(a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak,
                        mask=(offs_am[:, None] < M) & (offs_k[None, :] < K), other=0.0)
            b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn,
                        mask=(offs_k[:, None] < K) & (offs_bn[None, :] < N), other=0.0)
            if IEEE:
                accumulator = tl.dot(a, b, accumulator, input_precision="ieee")
            else:
                accumulator = tl.dot(a, b, accumulator)
        c = accumulator.to(c_ptr.dtype.element_ty)
        tl.store(c_ptr + offs_am[:, None] * stride_cm + offs_bn[None, :] * stride_cn, c,
                 mask=(offs_am[:, None] < M) & (offs_bn[None, :] < N))


def _num_sms(device):
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


def matmul_persistent(a, b):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    BM, BN, BK = 32, 32, 32
    num_sms = _num_sms(a.device)
    grid = (min(num_sms, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    matmul_kernel_persistent[grid](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
        c.stride(1), BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=4,
        NUM_SMS=num_sms, IEEE=a.dtype == torch.float32)
    return c


target = fuzzkern.Target(
    name="accuracy.ok_matmul_persistent",
    launcher=matmul_persistent,
    reference=lambda a, b: a @ b,
    inputs=fks.inputs(
        a=fks.tensors(("M", "K"), expand=True),
        b=fks.tensors(("K", "N"), dtype_of="a", expand=True),
    ),
    dims={"M": fks.sizes(max_value=96), "N": fks.sizes(max_value=64),
          "K": fks.sizes(max_value=384)},
)
