"""In-place ReLU that runs on ``x.reshape(-1)``, which is a copy for some layouts.

The kernel is a strided 1-D loop, so the in-place wrapper flattens its argument. ``x.view(-1)``
raised for a transposed input, so the author switched to ``x.reshape(-1)``, which returns a
view when it can and silently a copy when it cannot: the kernel then updates the copy and the
caller's tensor is left untouched. Inputs that are dense in row-major order, or that only have
a storage offset or a step along one dim, flatten to a view and work.

KNOWN MINIMAL CASE: dims ``{"M": 2, "N": 2}``; x transposed (or with a gap between rows, any
layout that cannot be flattened to one stride) float32 with a negative element (seed 0's small
ints: [[4, -4], [-2, 2]]). With M=1 or N=1 every layout flattens to a view.
"""

import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "in-place update written into a copy (reshape of a non-viewable tensor)",
    "peers": "none (in-place through a copy; tests/quality has the .contiguous() variant)",
    "real_instance": "torch reshape-returns-a-copy pitfall in in-place wrappers",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 2, "N": 2},
    "minimal_case": "M=2, N=2; x transposed float32 with a negative element",
    "interpreter_visible": True,
}

BLOCK = 256


@triton.jit
def _relu_kernel(x_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride, mask=mask)
    tl.store(x_ptr + offs * stride, tl.where(x < 0, 0.0, x), mask=mask)


def relu_(x):
    flat = x.reshape(-1)
    n = flat.numel()
    _relu_kernel[(triton.cdiv(n, BLOCK),)](flat, n, flat.stride(0), BLOCK=BLOCK)
    return x


target = fuzzkern.Target(
    name="planted.relu_inplace_reshape",
    launcher=relu_,
    reference=lambda x: x.relu(),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float32", "float16"])),
    dims={"M": fks.sizes(max_value=64), "N": fks.sizes(max_value=64)},
    inplace="x",
)
