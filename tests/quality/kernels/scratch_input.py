"""Planted bug: the kernel uses its input as scratch space.

A two-pass kernel keeps its intermediate (``2 * x``) in memory between the passes and, to
save a workspace, writes it over ``x`` itself. The output is right, so a value check alone
never sees the bug; but the caller's ``x`` has changed, and any later use of it (a backward
pass, a second kernel, a retry) computes with garbage. The target does not declare
``inplace="x"``, so ``x`` must be bit-identical after the launch. The fixed kernel keeps the
intermediate in ``out``, which it owns.

KNOWN MINIMAL CASE: dims ``{"N": 1}``; x contiguous float32; BLOCK=16; seed 0 (x = [4]):
the launch leaves x = [8]. Only a zero element survives unchanged (2 * 0 == 0).

EXPECTED VERDICT: ``input-mutated``.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "input-mutated"
MINIMAL_DIMS = {"N": 1}
MINIMAL_CASE = "N=1; x contiguous float32; BLOCK=16"


@triton.jit
def double_plus_one_buggy(x_ptr, out_ptr, n, stride_x, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride_x, mask=mask)
    tl.store(x_ptr + offs * stride_x, 2 * x, mask=mask)  # BUG: scratch written over the input
    y = tl.load(x_ptr + offs * stride_x, mask=mask)
    tl.store(out_ptr + offs, y + 1, mask=mask)


@triton.jit
def double_plus_one(x_ptr, out_ptr, n, stride_x, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride_x, mask=mask)
    tl.store(out_ptr + offs, 2 * x, mask=mask)  # scratch in the output, which the kernel owns
    y = tl.load(out_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, y + 1, mask=mask)


def _launch(kernel, x, BLOCK):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    kernel[(triton.cdiv(n, BLOCK),)](x, out, n, x.stride(0), BLOCK=BLOCK)
    return out


def launch_buggy(x, BLOCK=16):
    return _launch(double_plus_one_buggy, x, BLOCK)


def launch(x, BLOCK=16):
    return _launch(double_plus_one, x, BLOCK)


def reference(x):
    return 2 * x + 1


INPUTS = fks.inputs(
    x=fks.tensors(("N",), dtypes=["float32", "float16"]),
    BLOCK=st.sampled_from([16, 32]),
)
DIMS = {"N": fks.sizes(max_value=64)}

buggy = fuzzkern.Target(
    name="quality.scratch_input.buggy", launcher=launch_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
correct = fuzzkern.Target(
    name="quality.scratch_input.correct", launcher=launch, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
