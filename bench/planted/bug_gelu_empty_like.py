"""Elementwise GELU whose output is ``torch.empty_like(x)`` but is written in row-major order.

The launcher makes the input contiguous for a flat 1-D kernel (a common way to support any
layout) and allocates the output with ``torch.empty_like(x)``. For a dense but permuted input
(a transpose, ``channels_last``) ``empty_like`` keeps the permuted strides, so the kernel's
flat, row-major writes land in the wrong logical places: the result comes back transposed.
For inputs with gaps ``empty_like`` returns a contiguous tensor and the bug hides. Real
instance: FlagGems ``bucketize`` returned its ``empty_like`` output written as a flat copy
(flagos-ai/FlagGems PR #4831).

KNOWN MINIMAL CASE: dims ``{"M": 2, "N": 2}``; x transposed (dense), float32, with
``gelu(x[0, 1]) != gelu(x[1, 0])`` (seed 0's small ints: x = [[4, -4], [-2, 2]]). With M=1 or
N=1 a transposed x has the same memory order as a contiguous one.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "empty_like(non-contiguous) output written as if contiguous",
    "peers": "bug class #4",
    "real_instance": "flagos-ai/FlagGems PR #4831 (bucketize)",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 2, "N": 2},
    "minimal_case": "M=2, N=2; x transposed (dense) float32",
    "interpreter_visible": True,
    "baseline": {"scalars": {"BLOCK": 1024}},
}


@triton.jit
def _gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def gelu(x, BLOCK=1024):
    y = torch.empty_like(x)
    n = x.numel()
    _gelu_kernel[(triton.cdiv(n, BLOCK),)](x.contiguous(), y, n, BLOCK=BLOCK)
    return y


target = fuzzkern.Target(
    name="planted.gelu_empty_like",
    launcher=gelu,
    reference=lambda x: torch.nn.functional.gelu(x),
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float32", "float16"]),
        BLOCK=st.sampled_from([64, 256, 1024]),
    ),
    dims={"M": fks.sizes(max_value=64), "N": fks.sizes(max_value=64)},
)
