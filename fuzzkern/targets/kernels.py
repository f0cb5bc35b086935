"""The seed's Triton kernels and their host launchers, shipped as fuzzkern's built-in targets.

Plain Triton in the style of the official tutorials, with one deliberate difference: every
kernel takes the strides of every tensor it reads, so it is correct for any layout a case can
draw (permuted, stepped, offset, and stride-0 expanded inputs). Launchers allocate outputs on
``x.device``, so the same code runs on CPU tensors under Triton's interpreter and on CUDA.

NaN/inf semantics follow torch: sums and products propagate NaN and inf as IEEE arithmetic
does, and :func:`matmul_relu` propagates NaN like ``torch.relu`` (see :func:`_relu`).

Example (CPU tensors need ``TRITON_INTERPRET=1`` set before triton is imported)::

    x = torch.arange(5.0)
    vector_add(x, x, BLOCK=64)  # tensor([0., 2., 4., 6., 8.])
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# --------------------------------------------------------------------------------------------
# Vector add (tutorial 01, strided)


@triton.jit
def vector_add_kernel(
    x_ptr, y_ptr, out_ptr, n_elements, stride_x, stride_y, BLOCK: tl.constexpr
):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs * stride_x, mask=mask)
    y = tl.load(y_ptr + offs * stride_y, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor, BLOCK: int = 128) -> torch.Tensor:
    """``x + y`` for 1-D tensors of any stride (including 0); the output is contiguous."""
    assert x.dim() == 1 and x.shape == y.shape, "Incompatible shapes"
    assert x.dtype == y.dtype, "Incompatible dtypes"
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK),)
    vector_add_kernel[grid](x, y, out, n, x.stride(0), y.stride(0), BLOCK=BLOCK)
    return out


# --------------------------------------------------------------------------------------------
# Matmul (tutorial 03): shared tile helpers, used by the plain, ReLU, autotuned and persistent
# variants below.


@triton.jit
def _tile_ids(tile_id, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Grouped ("swizzled") order of output tiles, as in tutorial 03: GROUP_M rows of tiles are
    walked column by column to improve L2 reuse. A bijection for every GROUP_M >= 1."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _tile_dot(
    a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """fp32 accumulator of one (BLOCK_M, BLOCK_N) tile of ``a @ b``.

    Rows and columns past M/N wrap around (``% M``) instead of being masked, as in the
    tutorial: they read real elements and are never stored. The K tail is masked with 0.
    """
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
    return acc


@triton.jit
def _tile_store(
    c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


@triton.jit
def _relu(x):
    # `x < 0 ? 0 : x` rather than the tutorial's `x > 0 ? x : 0`: NaN compares false either
    # way, so this form keeps NaN (like torch.relu) where the other would turn it into 0.
    return tl.where(x < 0, 0.0, x)


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr,
):
    pid_m, pid_n = _tile_ids(tl.program_id(axis=0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _tile_dot(
        a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
        BLOCK_M, BLOCK_N, BLOCK_K,
    )
    if ACTIVATION == "relu":
        acc = _relu(acc)
    _tile_store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N)


def _check_matmul(a: torch.Tensor, b: torch.Tensor) -> None:
    assert a.dim() == 2 and b.dim() == 2, "Matrices must be 2-D"
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.dtype == b.dtype == torch.float16, "Inputs must be float16"


def matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    BLOCK_M: int = 32,
    BLOCK_N: int = 32,
    BLOCK_K: int = 32,
    GROUP_M: int = 8,
    activation: str = "",
) -> torch.Tensor:
    """``a @ b`` for float16 matrices of any strides; fp32 accumulation, float16 output."""
    _check_matmul(a, b)
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
        ACTIVATION=activation,
    )
    return c


def matmul_relu(
    a: torch.Tensor,
    b: torch.Tensor,
    BLOCK_M: int = 32,
    BLOCK_N: int = 32,
    BLOCK_K: int = 32,
    GROUP_M: int = 8,
) -> torch.Tensor:
    """``relu(a @ b)`` with the ReLU fused into the matmul epilogue (``tl.where``).

    NaN semantics are those of ``torch.relu``: a NaN product stays NaN.
    """
    return matmul(a, b, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, activation="relu")


# --------------------------------------------------------------------------------------------
# Autotuned matmul (tutorial 03's @triton.autotune). Small tiles only: fuzzkern forces one
# config per case and runs it in the interpreter too, where cost grows with tile count.

MATMUL_CONFIGS = [
    triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1}, num_warps=2),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 8}, num_warps=4),
    triton.Config({"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 2}, num_warps=2,
                  num_stages=3),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32, "GROUP_M": 4}, num_warps=4,
                  num_stages=4),
]


@triton.autotune(configs=MATMUL_CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_autotuned_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid_m, pid_n = _tile_ids(tl.program_id(axis=0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _tile_dot(
        a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
        BLOCK_M, BLOCK_N, BLOCK_K,
    )
    _tile_store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N)


def matmul_autotuned(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` (float16, fp32 accumulation) with the tile shape picked by the autotuner."""
    _check_matmul(a, b)
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)

    def grid(META):
        return (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)

    matmul_autotuned_kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
    )
    return c


# --------------------------------------------------------------------------------------------
# Persistent matmul (tutorial 09): a fixed grid of NUM_SMS programs walks the output tiles.


@triton.jit
def matmul_persistent_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
):
    start_pid = tl.program_id(axis=0)
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        pid_m, pid_n = _tile_ids(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = _tile_dot(
            a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
            BLOCK_M, BLOCK_N, BLOCK_K,
        )
        _tile_store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N)


def num_sms(device: torch.device) -> int:
    """Streaming multiprocessors of ``device`` (a small stand-in off CUDA)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


def matmul_persistent(
    a: torch.Tensor,
    b: torch.Tensor,
    BLOCK_M: int = 32,
    BLOCK_N: int = 32,
    BLOCK_K: int = 32,
    GROUP_M: int = 8,
    NUM_SMS: int | None = None,
) -> torch.Tensor:
    """``a @ b`` (float16, fp32 accumulation) on ``min(NUM_SMS, tiles)`` persistent programs.

    ``NUM_SMS`` defaults to the device's SM count; pass it to fix the grid (the fuzz target
    draws it from small values so that programs own one, several or no tiles).
    """
    _check_matmul(a, b)
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    sms = num_sms(a.device) if NUM_SMS is None else NUM_SMS
    num_tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    grid = (min(sms, num_tiles),)
    matmul_persistent_kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, NUM_SMS=sms,
    )
    return c


# --------------------------------------------------------------------------------------------
# A heuristics-configured kernel: axpy that drops the tail mask when BLOCK divides n.


@triton.heuristics({"EVEN_N": lambda args: args["n_elements"] % args["BLOCK"] == 0})
@triton.jit
def axpy_kernel(
    x_ptr, y_ptr, out_ptr, alpha, n_elements, stride_x, stride_y,
    BLOCK: tl.constexpr, EVEN_N: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if EVEN_N:
        x = tl.load(x_ptr + offs * stride_x)
        y = tl.load(y_ptr + offs * stride_y)
    else:
        x = tl.load(x_ptr + offs * stride_x, mask=offs < n_elements)
        y = tl.load(y_ptr + offs * stride_y, mask=offs < n_elements)
    out = alpha * x.to(tl.float32) + y.to(tl.float32)
    if EVEN_N:
        tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty))
    else:
        tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=offs < n_elements)


def axpy(x: torch.Tensor, y: torch.Tensor, alpha: float = 1.0, BLOCK: int = 64) -> torch.Tensor:
    """``alpha * x + y`` for 1-D tensors of any stride, computed in fp32, stored as x's dtype."""
    assert x.dim() == 1 and x.shape == y.shape, "Incompatible shapes"
    assert x.dtype == y.dtype, "Incompatible dtypes"
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK),)
    axpy_kernel[grid](x, y, out, alpha, n, x.stride(0), y.stride(0), BLOCK=BLOCK)
    return out


# --------------------------------------------------------------------------------------------
# Row reduction: BLOCK_M rows per program, a loop over column blocks, tl.sum(axis=1).


@triton.jit
def row_sum_kernel(
    x_ptr, out_ptr, M, N, stride_xm, stride_xn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        ptrs = x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn
        mask = row_mask[:, None] & (cols[None, :] < N)
        acc += tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=row_mask)


def row_sum(x: torch.Tensor, BLOCK_M: int = 4, BLOCK_N: int = 64) -> torch.Tensor:
    """``x.sum(dim=1)`` for a 2-D tensor of any strides, accumulated and returned in float32."""
    assert x.dim() == 2, "Input must be 2-D"
    M, N = x.shape
    out = torch.empty((M,), dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(M, BLOCK_M),)
    row_sum_kernel[grid](x, out, M, N, x.stride(0), x.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out
