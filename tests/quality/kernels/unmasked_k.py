"""Planted bug: the matmul K loop loads without the K-tail mask (docs/architecture.md,
class #2, in its matmul form).

Rows and columns are kept in bounds with the tutorial's ``% M`` / ``% N`` wrap-around, so the
only masks are on K, and the buggy kernel drops them: when ``K % BLOCK_K != 0`` the last K
step reads ``a[:, K:BLOCK_K]`` and ``b[K:BLOCK_K, :]``, which run past the end of a's last
row and of b's storage.

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 1, "K": 1}``; a, b contiguous float16;
BLOCK_M=BLOCK_N=BLOCK_K=16. The first K step reads a[0, 1:16], past a's single element.

EXPECTED VERDICT: ``oob``.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "oob"
MINIMAL_DIMS = {"M": 1, "N": 1, "K": 1}
MINIMAL_CASE = "M=N=K=1; a, b contiguous float16; BLOCK_M=BLOCK_N=BLOCK_K=16"


@triton.jit
def matmul_kernel_buggy(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs)  # BUG: no mask=offs_k[None, :] < K - _k * BLOCK_K
        b = tl.load(b_ptrs)  # BUG: no mask=offs_k[:, None] < K - _k * BLOCK_K
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def _launch(kernel, a, b, BLOCK_M, BLOCK_N, BLOCK_K):
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
    )
    return c


def matmul_buggy(a, b, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16):
    return _launch(matmul_kernel_buggy, a, b, BLOCK_M, BLOCK_N, BLOCK_K)


def matmul(a, b, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16):
    return _launch(matmul_kernel, a, b, BLOCK_M, BLOCK_N, BLOCK_K)


def reference(a, b):
    return a @ b


BLOCKS = st.sampled_from([16, 32])
INPUTS = fks.inputs(
    a=fks.tensors(("M", "K"), dtypes=["float16"]),
    b=fks.tensors(("K", "N"), dtype_of="a"),
    BLOCK_M=BLOCKS, BLOCK_N=BLOCKS, BLOCK_K=BLOCKS,
)
DIMS = {"M": fks.sizes(max_value=48), "N": fks.sizes(max_value=48), "K": fks.sizes(max_value=64)}

buggy = fuzzkern.Target(
    name="quality.unmasked_k.buggy", launcher=matmul_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS, reduction="K",
)
correct = fuzzkern.Target(
    name="quality.unmasked_k.correct", launcher=matmul, reference=reference,
    inputs=INPUTS, dims=DIMS, reduction="K",
)
