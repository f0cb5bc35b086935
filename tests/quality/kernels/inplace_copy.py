"""Planted bug: an in-place update is written into a ``.contiguous()`` copy.

The kernel handles a contiguous ``x`` only, so the launcher makes it contiguous first. For a
non-contiguous ``x``, ``x.contiguous()`` is a new tensor, and the buggy launcher never copies
the result back: the caller's ``x`` is left unchanged. The fixed launcher copies back.

KNOWN MINIMAL CASE: dims ``{"N": 2}``; x a stepped view (step 2), y contiguous; float32;
BLOCK=16; y not all zero (seed 0: x = y = [4, -4], so x should become [8, -8]). With N=1, or
with only a storage offset, ``x`` already counts as contiguous and ``.contiguous()`` returns
``x`` itself, so N=2 and a step are needed.

EXPECTED VERDICT: ``kernel-bug`` (target has ``inplace="x"``).
"""

import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "kernel-bug"
MINIMAL_DIMS = {"N": 2}
MINIMAL_CASE = "N=2; x stepped (stride 2), y contiguous; float32; BLOCK=16"


@triton.jit
def add_inplace_kernel(x_ptr, y_ptr, n, stride_y, BLOCK: tl.constexpr):
    # x is contiguous here (the launcher makes sure of it); y may have any stride.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs * stride_y, mask=mask)
    tl.store(x_ptr + offs, x + y, mask=mask)


def add_inplace_buggy(x, y, BLOCK=16):
    """``x += y``."""
    xc = x.contiguous()
    n = xc.numel()
    add_inplace_kernel[(triton.cdiv(n, BLOCK),)](xc, y, n, y.stride(0), BLOCK=BLOCK)
    # BUG: when xc is a copy, the result never reaches x


def add_inplace(x, y, BLOCK=16):
    """``x += y``."""
    xc = x.contiguous()
    n = xc.numel()
    add_inplace_kernel[(triton.cdiv(n, BLOCK),)](xc, y, n, y.stride(0), BLOCK=BLOCK)
    if xc.data_ptr() != x.data_ptr():
        x.copy_(xc)


def reference(x, y):
    return x + y


INPUTS = fks.inputs(
    x=fks.tensors(("N",), dtypes=["float32", "float16"]),
    y=fks.tensors(("N",), dtype_of="x"),
    BLOCK=st.sampled_from([16, 32]),
)
DIMS = {"N": fks.sizes(max_value=64)}

buggy = fuzzkern.Target(
    name="quality.inplace_copy.buggy", launcher=add_inplace_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS, inplace="x",
)
correct = fuzzkern.Target(
    name="quality.inplace_copy.correct", launcher=add_inplace, reference=reference,
    inputs=INPUTS, dims=DIMS, inplace="x",
)
