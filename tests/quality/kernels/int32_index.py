"""Planted bug: index arithmetic in int32 overflows for a large stride scalar.

A strided gather ``out[i] = x[(i * stride) % n]`` (a perfect-shuffle / stride permutation, as
in interleaving and FFT index maps) computes ``i * stride`` in int32: Triton types ``offs``
as int32 and a Python int below 2**31 as an int32 scalar. Once ``i * stride`` passes 2**31 the
product wraps, the remainder is negative, and the load reads before the start of ``x``. The
fixed kernel widens to int64 first (``offs.to(tl.int64) * stride``).

Found with ``debug=True`` (``fuzzkern run --debug-kernels``), which turns on Triton's integer
overflow check for ``+ - *`` in i8..i32, in the interpreter as compiled. The check covers
every lane, masked-off lanes included (as compiled), so even N=1 trips it: lane 15 of the
only program computes ``15 * stride``.

KNOWN MINIMAL CASE: dims ``{"N": 1}``; x contiguous float32; BLOCK=16; stride=143165577, the
smallest stride with ``15 * stride >= 2**31``.

EXPECTED VERDICT: ``overflow`` (operation ``mul``), with debug on. Without debug the wrapped
index surfaces later and less clearly, as ``oob`` (a read before the start of ``x``) or a
wrong value, and needs N large enough for an active lane to wrap.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "overflow"
MINIMAL_DIMS = {"N": 1}
MINIMAL_STRIDE = 143165577  # ceil(2**31 / 15)
MINIMAL_CASE = "N=1; x contiguous float32; BLOCK=16; stride=143165577"
DEBUG = True  # the campaign option this bug needs


@triton.jit
def gather_buggy(x_ptr, out_ptr, n, stride_x, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    src = (offs * stride) % n  # BUG: int32 product
    tl.store(out_ptr + offs, tl.load(x_ptr + src * stride_x, mask=mask), mask=mask)


@triton.jit
def gather(x_ptr, out_ptr, n, stride_x, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    src = (offs.to(tl.int64) * stride) % n
    tl.store(out_ptr + offs, tl.load(x_ptr + src * stride_x, mask=mask), mask=mask)


def _launch(kernel, x, stride, BLOCK):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    kernel[(triton.cdiv(n, BLOCK),)](x, out, n, x.stride(0), stride, BLOCK=BLOCK)
    return out


def launch_buggy(x, stride, BLOCK=16):
    return _launch(gather_buggy, x, stride, BLOCK)


def launch(x, stride, BLOCK=16):
    return _launch(gather, x, stride, BLOCK)


def reference(x, stride):
    n = x.shape[0]
    return x[(torch.arange(n, dtype=torch.int64) * stride) % n]


INPUTS = fks.inputs(
    x=fks.tensors(("N",), dtypes=["float32", "float16"]),
    BLOCK=st.sampled_from([16, 32]),
    stride=st.integers(1, 2**31 - 1),
)
DIMS = {"N": fks.sizes(max_value=64)}

buggy = fuzzkern.Target(
    name="quality.int32_index.buggy", launcher=launch_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
correct = fuzzkern.Target(
    name="quality.int32_index.correct", launcher=launch, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
