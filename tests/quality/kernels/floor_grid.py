"""Planted bug: the grid is ``N // BLOCK`` instead of ``cdiv(N, BLOCK)``.

The last, partial block is never launched, so the tail of ``out`` is never written: it keeps
whatever ``torch.empty`` returned. When ``N < BLOCK`` the grid is empty and nothing at all is
written. Every access is in bounds.

KNOWN MINIMAL CASE: dims ``{"N": 1}``; x, y contiguous float32; BLOCK=16 (grid of 0
programs). Any N that BLOCK does not divide fails.

EXPECTED VERDICT: ``unwritten-output``. fuzzkern fills ``torch.empty`` allocations with a
poison pattern (a NaN with a payload), so the tail deterministically differs from the
reference, and every mismatching element still holds that exact pattern: the kernel never
wrote it (rather than wrote a wrong value). With poisoning off the bug depends on what the
allocator returns (fresh CPU pages are zeros: found only when x + y != 0).
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "unwritten-output"
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
