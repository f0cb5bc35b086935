"""Planted bug: the kernel spin-waits on a flag that nothing ever sets.

A common producer/consumer pattern (a ready flag written by another kernel or program) gone
wrong: the launcher allocates the flag as 0 and no one writes 1, so every program spins in
``while tl.load(flag) == 0`` forever, in the interpreter and on the GPU alike. The fixed twin
starts with the flag set. ``timeout`` is short so the quality test does not wait long; it
still leaves room for a first compilation on the GPU.

KNOWN MINIMAL CASE: dims ``{"N": 1}``; x contiguous float32; BLOCK=16 (every case hangs).

EXPECTED VERDICT: ``hang``.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "hang"
MINIMAL_DIMS = {"N": 1}
MINIMAL_CASE = "N=1; x contiguous float32; BLOCK=16"
TIMEOUT = 5.0


@triton.jit
def wait_then_copy_kernel(flag_ptr, x_ptr, out_ptr, n, stride_x, BLOCK: tl.constexpr):
    while tl.load(flag_ptr, volatile=True) == 0:
        pass
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride_x, mask=mask), mask=mask)


def _launch(x, BLOCK, flag_value):
    flag = torch.full((1,), flag_value, dtype=torch.int32, device=x.device)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    wait_then_copy_kernel[(triton.cdiv(n, BLOCK),)](flag, x, out, n, x.stride(0), BLOCK=BLOCK)
    return out


def copy_buggy(x, BLOCK=16):
    return _launch(x, BLOCK, 0)  # BUG: nothing ever sets the flag


def copy(x, BLOCK=16):
    return _launch(x, BLOCK, 1)


def reference(x):
    return x.clone()


INPUTS = fks.inputs(
    x=fks.tensors(("N",), dtypes=["float32", "float16"]),
    BLOCK=st.sampled_from([16, 32]),
)
DIMS = {"N": fks.sizes(max_value=64)}

buggy = fuzzkern.Target(
    name="quality.hang.buggy", launcher=copy_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS, timeout=TIMEOUT,
)
correct = fuzzkern.Target(
    name="quality.hang.correct", launcher=copy, reference=reference,
    inputs=INPUTS, dims=DIMS, timeout=TIMEOUT,
)
