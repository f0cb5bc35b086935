"""Planted bug: the input's stride is ignored; the kernel assumes it is contiguous
(bug class #3 in docs/architecture.md; e.g. FlagGems sum/mean, Torch-FL #171).

The buggy kernel indexes ``x`` with ``offs`` instead of ``offs * stride_x``. On a stepped
view it reads the storage gaps (NaN-filled by fuzzkern) and the wrong elements. The reads stay
inside x's storage, so a storage-granular bounds check (and a GPU) sees nothing; fuzzkern's
view checker sees a read of an element that is not part of the view passed to the kernel.

KNOWN MINIMAL CASE: dims ``{"N": 2}``; x a stepped view (step 2, stride 2), y contiguous;
float32; BLOCK=16. Element 1 reads x's storage gap (storage element 1) instead of x[1]. With
N=1 only element 0 is read, which is right for every stride, so N=2 is the smallest failing
size; a storage offset alone does not trigger it (the base pointer carries the offset).

EXPECTED VERDICT: ``oob-view`` (with the view checker off: ``kernel-bug``, the gap's NaN).
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "oob-view"
MINIMAL_DIMS = {"N": 2}
MINIMAL_CASE = "N=2; x stepped (stride 2), y contiguous; float32; BLOCK=16"


@triton.jit
def add_kernel_buggy(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)  # BUG: should be offs * stride_x
    y = tl.load(y_ptr + offs * stride_y, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


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
    name="quality.ignored_stride.buggy", launcher=add_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
correct = fuzzkern.Target(
    name="quality.ignored_stride.correct", launcher=add, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
