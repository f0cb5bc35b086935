"""Planted bug: no mask on the last block (bug class #2 in docs/architecture.md).

The buggy kernel loads and stores a whole BLOCK even when ``N % BLOCK != 0``, so the tail
lanes of the last program read past the end of ``x`` and ``y`` and write past the end of
``out``. The interpreter's bounds checker stops the first such access.

KNOWN MINIMAL CASE: dims ``{"N": 1}``; x and y contiguous float32; BLOCK=16 (the smallest);
any values. Lanes 1..15 of program 0 are out of bounds. Every N that BLOCK does not divide
fails, so the shrinker reaches N=1.

EXPECTED VERDICT: ``oob``.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "oob"
MINIMAL_DIMS = {"N": 1}
MINIMAL_CASE = "N=1; x, y contiguous float32; BLOCK=16"


@triton.jit
def add_kernel_buggy(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * stride_x)  # BUG: no mask=offs < n
    y = tl.load(y_ptr + offs * stride_y)
    tl.store(out_ptr + offs, x + y)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride_x, mask=mask)
    y = tl.load(y_ptr + offs * stride_y, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def _launch(kernel, x, y, BLOCK):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, x.stride(0), y.stride(0), BLOCK=BLOCK)
    return out


def add_buggy(x, y, BLOCK=16):
    return _launch(add_kernel_buggy, x, y, BLOCK)


def add(x, y, BLOCK=16):
    return _launch(add_kernel, x, y, BLOCK)


def reference(x, y):
    return x + y


INPUTS = fks.inputs(
    x=fks.tensors(("N",), dtypes=["float32", "float16"]),
    y=fks.tensors(("N",), dtype_of="x"),
    BLOCK=st.sampled_from([16, 32]),
)
DIMS = {"N": fks.sizes(max_value=64)}

buggy = fuzzkern.Target(
    name="quality.missing_mask.buggy", launcher=add_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
correct = fuzzkern.Target(
    name="quality.missing_mask.correct", launcher=add, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
