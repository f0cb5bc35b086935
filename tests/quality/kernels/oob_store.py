"""Planted bug: the store mask is off by one (``offs <= n``), so one element is written just
past the end of ``out``. The loads are masked correctly.

On a GPU this write usually lands in the caching allocator's slack and goes unnoticed; the
interpreter's bounds checker must catch an overrun of a single element.

KNOWN MINIMAL CASE: dims ``{"N": 1}``; x contiguous float32; BLOCK=16. Lane 1 of program 0
stores to out[1], one element past the end. Any N that BLOCK does not divide fails (when BLOCK
divides N, lane ``n`` belongs to no program).

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
MINIMAL_CASE = "N=1; x contiguous float32; BLOCK=16"


@triton.jit
def scale_kernel_buggy(x_ptr, out_ptr, n, stride_x, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * stride_x, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, 2 * x, mask=offs <= n)  # BUG: should be offs < n


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, stride_x, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * stride_x, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, 2 * x, mask=offs < n)


def _launch(kernel, x, BLOCK):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    kernel[(triton.cdiv(n, BLOCK),)](x, out, n, x.stride(0), BLOCK=BLOCK)
    return out


def scale_buggy(x, BLOCK=16):
    return _launch(scale_kernel_buggy, x, BLOCK)


def scale(x, BLOCK=16):
    return _launch(scale_kernel, x, BLOCK)


def reference(x):
    return 2 * x


INPUTS = fks.inputs(
    x=fks.tensors(("N",), dtypes=["float32", "float16"]),
    BLOCK=st.sampled_from([16, 32]),
)
DIMS = {"N": fks.sizes(max_value=64)}

buggy = fuzzkern.Target(
    name="quality.oob_store.buggy", launcher=scale_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
correct = fuzzkern.Target(
    name="quality.oob_store.correct", launcher=scale, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
