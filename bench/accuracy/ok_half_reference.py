"""Correct: a GELU (tanh form) in fp16 whose user reference rounds to fp16 itself (``.half()``).

The kernel computes in float32 and rounds once on store. The reference is written the way
users check an fp16 kernel, ``F.gelu(x.float(), approximate="tanh").half()``: it computes in
float32 and rounds, so "torch at the inputs' precision" is the reference itself and the
outside rules see no rounding to allow for. Where ``tanh`` saturates and ``x * (1 + t)`` cancels
(large negative ``x``), both are a few fp16 ulps from the exact value, each its own way.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "tanh-GELU fp16, reference that calls .float() and .half() itself",
    "style": "Liger-Kernel geglu / attorch gelu",
    "expected_verdicts": [],
}


@triton.jit
def _tanh(x):
    return 2 * tl.sigmoid(2 * x) - 1


@triton.jit
def _gelu(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = 0.5 * x * (1 + _tanh(inner))
    tl.store(Y + offs, y.to(Y.dtype.element_ty), mask=mask)


def gelu(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    _gelu[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
    return y


target = fuzzkern.Target(
    name="accuracy.ok_half_reference",
    launcher=gelu,
    reference=lambda x: torch.nn.functional.gelu(x.float(), approximate="tanh").half(),
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float16"])),
    dims={"N": fks.sizes(max_value=2048)},
)
