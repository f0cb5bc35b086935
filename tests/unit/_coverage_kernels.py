"""Small Triton kernels for tests/unit/test_coverage.py: each line's number is asserted there,
so add new kernels at the end of the file only."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _twice(x):
    return x * 2


@triton.jit
def branchy_kernel(x_ptr, out_ptr, n, BIG, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if n > BIG:
        x = _twice(x)
    else:
        x = x + 1
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _i in range(0, n, BLOCK):
        acc += 1.0
    y = tl.where(x > 0, x, acc)
    tl.store(out_ptr + offs, y, mask=mask)


def branchy(x: torch.Tensor, big: int = 1000, BLOCK: int = 8) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    branchy_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, big, BLOCK=BLOCK)
    return out


@triton.jit
def while_kernel(out_ptr, n):
    i = 0
    while i < n:
        i += 1
    tl.store(out_ptr, i)


def count_up(n: int) -> torch.Tensor:
    out = torch.zeros(1, dtype=torch.int32)
    while_kernel[(1,)](out, n)
    return out


@triton.jit
def argmax_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    best = tl.full((BLOCK,), float("-inf"), tl.float32)
    where = tl.zeros((BLOCK,), dtype=tl.int32)
    for i in range(tl.cdiv(n, BLOCK)):
        offs = i * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=float("-inf"))
        better = x > best
        best = tl.where(better, x, best)
        where = tl.where(better, offs, where)
    top = tl.max(best, axis=0)
    first = tl.min(tl.where(best == top, where, n), axis=0)
    first = tl.where(n > 0, first, -1)
    tl.store(out_ptr, first)


def argmax(x: torch.Tensor, BLOCK: int = 4) -> torch.Tensor:
    out = torch.zeros(1, dtype=torch.int32)
    argmax_kernel[(1,)](x, out, x.numel(), BLOCK=BLOCK)
    return out
