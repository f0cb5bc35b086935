"""Planted bug: the grid is ``N // BLOCK`` instead of ``cdiv(N, BLOCK)``.

The last, partial block is never launched, so the tail of ``out`` is never written: it keeps
whatever ``torch.empty`` returned. When ``N < BLOCK`` the grid is empty and nothing at all is
written. Every access is in bounds.

KNOWN MINIMAL CASE: dims ``{"N": 1}``; x, y contiguous float32; BLOCK=16 (grid of 0
programs). Any N that BLOCK does not divide fails.

EXPECTED VERDICT: ``kernel-bug`` (an unwritten output). Detection relies on the unwritten
memory not happening to hold the expected value: fuzzkern should poison fresh outputs (e.g.
fill ``torch.empty`` allocations with NaN) to make this deterministic.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "kernel-bug"
MINIMAL_DIMS = {"N": 1}
MINIMAL_CASE = "N=1; x, y contiguous float32; BLOCK=16"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride_x, mask=mask)
    y = tl.load(y_ptr + offs * stride_y, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add_buggy(x, y, BLOCK=16):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    grid = (n // BLOCK,)  # BUG: should be triton.cdiv(n, BLOCK)
    add_kernel[grid](x, y, out, n, x.stride(0), y.stride(0), BLOCK=BLOCK)
    return out


def add(x, y, BLOCK=16):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK),)
    add_kernel[grid](x, y, out, n, x.stride(0), y.stride(0), BLOCK=BLOCK)
    return out


def reference(x, y):
    return x + y


INPUTS = fks.inputs(
    x=fks.tensors(("N",), dtypes=["float32", "float16"]),
    y=fks.tensors(("N",), dtype_of="x"),
    BLOCK=st.sampled_from([16, 32]),
)
DIMS = {"N": fks.sizes(max_value=64)}

buggy = fuzzkern.Target(
    name="quality.floor_grid.buggy", launcher=add_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
correct = fuzzkern.Target(
    name="quality.floor_grid.correct", launcher=add, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
