"""Small Triton kernels and host launchers for tests/unit/test_interpreter.py.

They live in a real file because ``@triton.jit`` and the interpreter's AST rewrite both need
the source.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# -- vector add with a host launcher ----------------------------------------------------------


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor, BLOCK: int = 64) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    add_kernel[grid](x, y, out, n, BLOCK=BLOCK)
    return out


# -- matmul with `range(tl.cdiv(K, BK))` (the 3.6 + numpy >= 2.4 __index__ bug) ----------------


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * sbk + rn[None, :] * sbn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=torch.float32)
    BM, BN, BK = 16, 16, 16
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK)
    return c


# -- reductions, nested helper, member functions -----------------------------------------------


@triton.jit
def _sq_sum(x):
    return tl.sum(x * x, axis=0)


@triton.jit
def row_stats_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    xm = tl.load(x_ptr + row * N + cols, mask=mask, other=float("-inf"))
    tl.store(out_ptr + row * 4 + 0, tl.sum(x, axis=0))
    tl.store(out_ptr + row * 4 + 1, tl.max(xm, axis=0))
    tl.store(out_ptr + row * 4 + 2, _sq_sum(x))
    tl.store(out_ptr + row * 4 + 3, x.sum(axis=0) + tl.cdiv(N, 2))


def row_stats(x: torch.Tensor) -> torch.Tensor:
    R, N = x.shape
    out = torch.empty((R, 4), dtype=torch.float32)
    row_stats_kernel[(R,)](x, out, N, BLOCK=triton.next_power_of_2(N))
    return out


@triton.jit
def int_sum_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + cols, mask=cols < N, other=0), axis=0))


def int32_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum of an int32 vector in int32 (wraps past 2**31 - 1, as on the GPU), as int64."""
    out = torch.zeros((1,), dtype=torch.int64)
    int_sum_kernel[(1,)](x, out, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
    return out


# -- autotune + heuristics ---------------------------------------------------------------------

HOOK_CALLS: list[str] = []


def _cfg_hook(nargs):
    HOOK_CALLS.append(f"pre_hook BLOCK={nargs['BLOCK']}")


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 16}, num_warps=1),
        triton.Config({"BLOCK": 32}, num_warps=2, pre_hook=_cfg_hook),
        triton.Config({"BLOCK": 64}, num_warps=4, num_stages=2),
    ],
    key=["n"],
    reset_to_zero=["acc_ptr"],
)
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def tuned_scale_kernel(x_ptr, out_ptr, acc_ptr, blk_ptr, n, BLOCK: tl.constexpr,
                       EVEN: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, x * 2)
    else:
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x * 2, mask=mask)
    tl.atomic_add(acc_ptr, 1)
    if pid == 0:
        tl.store(blk_ptr, BLOCK)


def tuned_scale(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Returns (2*x, number of programs that ran, the BLOCK the kernel saw)."""
    out = torch.empty_like(x)
    acc = torch.full((1,), 100, dtype=torch.int32)  # reset_to_zero zeroes it on a cold call
    blk = torch.zeros(1, dtype=torch.int32)
    n = x.numel()
    tuned_scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, acc, blk, n)
    return out, acc, blk


def _drop_first(configs, named_args, **kwargs):
    return configs[1:]


@triton.heuristics({"SCALE": lambda args: 3})
@triton.autotune(
    configs=[triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 16}),
             triton.Config({"BLOCK": 32})],
    key=[],
    prune_configs_by={"early_config_prune": _drop_first},
)
@triton.jit
def pruned_kernel(x_ptr, out_ptr, blk_ptr, n, BLOCK: tl.constexpr, SCALE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)
    tl.store(blk_ptr, BLOCK)


def _pruned_inner(x, out, blk):
    n = x.numel()
    pruned_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, blk, n)


def pruned(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = torch.empty_like(x)
    blk = torch.zeros(1, dtype=torch.int32)
    _pruned_inner(x, out, blk)  # the kernel is reached through a helper (autotuners_of depth)
    return out, blk


def both_tuned(x: torch.Tensor) -> None:
    tuned_scale(x)
    pruned(x)


# -- out-of-bounds probes ----------------------------------------------------------------------


@triton.jit
def oob_load_kernel(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + (offs + shift))
    tl.store(out_ptr + offs, x)


@triton.jit
def oob_store_kernel(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + (offs + shift), x)


@triton.jit
def oob_atomic_kernel(acc_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(acc_ptr + (offs + shift), 1.0)


@triton.jit
def masked_far_kernel(x_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inb = offs < n
    far = offs + shift  # lanes past n point 2**40 elements away, but are masked off
    src = tl.where(inb, offs, far)
    x = tl.load(x_ptr + src, mask=inb, other=-1.0)
    tl.store(out_ptr + src, x, mask=inb)


@triton.jit
def _helper_load(ptr, offs):
    return tl.load(ptr + offs)


@triton.jit
def oob_in_helper_kernel(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = _helper_load(x_ptr, offs + shift)
    tl.store(out_ptr + offs, tl.sum(x, axis=0) + x)


# -- debug: device_assert and int32 overflow ---------------------------------------------------


@triton.jit
def assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x >= 0, "x must be non-negative")


@triton.jit
def overflow_kernel(a, b, out_ptr):
    tl.store(out_ptr, a * b)


@triton.jit(debug=True)
def debug_declared_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x >= 0, "declared debug")


# -- autotuners behind a library's own wrappers ----------------------------------------------------


class LaunchCache:
    """A library's decorator around an autotuned kernel (a launch cache): the Autotuner is
    an attribute, reached by ``self.kernel``, never by a name in a launcher's code."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.launches = 0

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.launches += 1
            return self.kernel[grid](*args, **kwargs)

        return launch


def launch_cache(kernel):
    return LaunchCache(kernel)


@launch_cache
@triton.autotune(configs=[triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 16}),
                          triton.Config({"BLOCK": 32})], key=["n"])
@triton.jit
def cached_kernel(x_ptr, out_ptr, blk_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)
    tl.store(blk_ptr, BLOCK)


def cached(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = torch.empty_like(x)
    blk = torch.zeros(1, dtype=torch.int32)
    n = x.numel()
    cached_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, blk, n)
    return out, blk


class BenchingAutotuner(triton.runtime.autotuner.Autotuner):
    """A library's Autotuner subclass with its own ``run`` and its own benchmarking."""

    bench_calls = 0

    def run(self, *args, **kwargs):
        type(self).bench_calls += 1  # its own timing loop, which needs a GPU
        raise RuntimeError("BenchingAutotuner benchmarked: no GPU here")


def benching_autotune(configs, key):
    def decorator(fn):
        return BenchingAutotuner(fn, fn.arg_names, configs, key, reset_to_zero=None,
                                 restore_value=None)

    return decorator


@benching_autotune(configs=[triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 32})],
                   key=["n"])
@triton.jit
def subclass_kernel(x_ptr, out_ptr, blk_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 5, mask=mask)
    tl.store(blk_ptr, BLOCK)


def subclassed(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = torch.empty_like(x)
    blk = torch.zeros(1, dtype=torch.int32)
    n = x.numel()
    subclass_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, blk, n)
    return out, blk


# -- a @jit helper and tl.standard helpers called in every program -----------------------------


@triton.jit
def _scaled_relu(x, s):
    return tl.maximum(x * s, 0.0)


@triton.jit
def helper_rows_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    y = _scaled_relu(x, 2.0)
    tl.store(out_ptr + row, tl.sum(y, axis=0) + tl.max(y, axis=0))


def helper_rows(x: torch.Tensor, BLOCK: int = 16) -> torch.Tensor:
    out = torch.empty(x.shape[0], dtype=x.dtype)
    helper_rows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=BLOCK)
    return out
