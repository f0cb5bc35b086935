"""Planted bug: a persistent matmul decomposes tile ids wrongly (tutorial 09's structure).

As in Triton's persistent-matmul tutorial, each program walks tiles ``start_pid,
start_pid + NUM_SMS, ...`` and decomposes the tile id twice: once for the loads of the main
loop and once (``tile_id_c``) for the epilogue's store. The buggy main loop computes
``pid_n = tile_id % num_pid_m`` instead of ``% num_pid_n``. When the tile grid is square
(num_pid_m == num_pid_n) that is the same thing; otherwise some tiles are computed from the
wrong columns of ``b`` and stored over the right place, so every element is written but some
hold another tile's numbers. Columns wrap around (``% N``), so nothing is out of bounds.

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 17, "K": 1}``; a, b contiguous float16;
BLOCK_M=BLOCK_N=BLOCK_K=16; NUM_SMS=1. One row of tiles, two columns of tiles: tile 1 gets
``pid_n = 1 % 1 = 0``, so c[0, 16] = a[0, 0] * b[0, 0] instead of a[0, 0] * b[0, 16]
(16 vs -16 with seed 0's small ints). N must exceed BLOCK_N for a second tile column, hence
17; the mirror case {"M": 17, "N": 1, "K": 1} also fails but draws M first.

EXPECTED VERDICT: ``kernel-bug``.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "kernel-bug"
MINIMAL_DIMS = {"M": 1, "N": 17, "K": 1}
MINIMAL_CASE = "M=1, N=17, K=1; a, b contiguous float16; all blocks 16; NUM_SMS=1"


@triton.jit
def _compute_pid(tile_id, num_pid_n):
    return tile_id // num_pid_n, tile_id % num_pid_n


@triton.jit
def _tile(
    a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for ki in range(0, tl.cdiv(K, BLOCK_K)):
        k = ki * BLOCK_K + offs_k
        a = tl.load(a_ptr + offs_am[:, None] * stride_am + k[None, :] * stride_ak,
                    mask=k[None, :] < K, other=0.0)
        b = tl.load(b_ptr + k[:, None] * stride_bk + offs_bn[None, :] * stride_bn,
                    mask=k[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def _store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def matmul_persistent_kernel_buggy(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr,
):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - NUM_SMS
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        pid_m = tile_id // num_pid_n
        pid_n = tile_id % num_pid_m  # BUG: should be tile_id % num_pid_n
        acc = _tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)
        tile_id_c += NUM_SMS
        pid_m_c, pid_n_c = _compute_pid(tile_id_c, num_pid_n)
        _store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m_c, pid_n_c, BLOCK_M, BLOCK_N)


@triton.jit
def matmul_persistent_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr,
):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - NUM_SMS
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        pid_m = tile_id // num_pid_n
        pid_n = tile_id % num_pid_n
        acc = _tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)
        tile_id_c += NUM_SMS
        pid_m_c, pid_n_c = _compute_pid(tile_id_c, num_pid_n)
        _store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m_c, pid_n_c, BLOCK_M, BLOCK_N)


def _launch(kernel, a, b, BLOCK_M, BLOCK_N, BLOCK_K, NUM_SMS):
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    num_tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    kernel[(min(NUM_SMS, num_tiles),)](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, NUM_SMS=NUM_SMS,
    )
    return c


def matmul_persistent_buggy(a, b, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, NUM_SMS=1):
    return _launch(matmul_persistent_kernel_buggy, a, b, BLOCK_M, BLOCK_N, BLOCK_K, NUM_SMS)


def matmul_persistent(a, b, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, NUM_SMS=1):
    return _launch(matmul_persistent_kernel, a, b, BLOCK_M, BLOCK_N, BLOCK_K, NUM_SMS)


def reference(a, b):
    return a @ b


BLOCKS = st.sampled_from([16, 32])
INPUTS = fks.inputs(
    a=fks.tensors(("M", "K"), dtypes=["float16"]),
    b=fks.tensors(("K", "N"), dtype_of="a"),
    BLOCK_M=BLOCKS, BLOCK_N=BLOCKS, BLOCK_K=BLOCKS,
    NUM_SMS=st.sampled_from([1, 2, 3]),
)
DIMS = {"M": fks.sizes(max_value=48), "N": fks.sizes(max_value=48), "K": fks.sizes(max_value=32)}

buggy = fuzzkern.Target(
    name="quality.persistent_tiles.buggy", launcher=matmul_persistent_buggy,
    reference=reference, inputs=INPUTS, dims=DIMS, reduction="K",
)
correct = fuzzkern.Target(
    name="quality.persistent_tiles.correct", launcher=matmul_persistent,
    reference=reference, inputs=INPUTS, dims=DIMS, reduction="K",
)
