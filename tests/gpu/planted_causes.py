"""Compiled-only differences with a known cause, for the attribution of compiled failures
(tests/gpu/test_causes_gpu.py). Each kernel is right in the interpreter; only the GPU's default
floating-point behaviour makes it differ from the float64 reference:

- ``fma_cancel``: ``(s x)^2 - (s y)^2`` for ``y`` a copy of ``x``: two roundings cancel exactly;
  fused into one multiply-add, the other product's rounding error is left (fused multiply-add).
- ``ftz_rsqrt``: ``rsqrt(x)`` of positive inputs: the GPU's approximate ``rsqrt`` flushes a
  subnormal input to zero and returns inf; the reference and the interpreter give a finite
  1/sqrt(x) (flush-to-zero).
- ``fma_variance``: a row's mean, with ``sqrt(E[x^2] - E[x]^2)`` taken on the way: exact 0 for a
  one-element row without FMA, negative (NaN) with it — a robustness bug FMA exposes, still the
  kernel's.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def _square_difference(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask) * 100.0
    y = tl.load(y_ptr + offs, mask=mask) * 100.0
    tl.store(out_ptr + offs, x * x - y * y, mask=mask)


def square_difference(x):
    out = torch.empty_like(x)
    n = x.numel()
    _square_difference[(triton.cdiv(n, 128),)](x, x.clone(), out, n, BLOCK=128)
    return out


fma_cancel = fuzzkern.Target(
    name="gpu.fma_cancel",
    launcher=square_difference,
    reference=lambda x: (x * 100.0) * (x * 100.0) - (x * 100.0) * (x * 100.0),
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False,
                                    values=fks.values(specials=False))),
    dims={"N": fks.sizes(max_value=64)},
)


@triton.jit
def _rsqrt(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.rsqrt(tl.load(x_ptr + offs, mask=mask, other=1.0)), mask=mask)


def rsqrt(x):
    out = torch.empty_like(x)
    n = x.numel()
    _rsqrt[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
    return out


ftz_rsqrt = fuzzkern.Target(
    name="gpu.ftz_rsqrt",
    launcher=rsqrt,
    reference=torch.rsqrt,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False,
                                    values=fks.values(sign="positive",
                                                      specials=["subnormal"]))),
    dims={"N": fks.sizes(max_value=64)},
)


@triton.jit
def _row_mean(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    mean = tl.sum(x, axis=0) / n
    var = tl.sum(x * x, axis=0) / n - mean * mean  # BUG: no clamp at 0
    # the mean, with a NaN escaping from sqrt of a negative variance (as a normalization
    # that divides by the standard deviation lets it escape)
    tl.store(out_ptr + row, mean + 0.0 * tl.sqrt(var))


def row_mean(x):
    m, n = x.shape
    out = torch.empty(m, device=x.device, dtype=x.dtype)
    _row_mean[(m,)](x.contiguous(), out, n, BLOCK=triton.next_power_of_2(n))
    return out


fma_variance = fuzzkern.Target(
    name="gpu.fma_variance",
    launcher=row_mean,
    reference=lambda x: x.mean(dim=1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float32"], layout=False,
                                    values=fks.values(specials=False))),
    dims={"M": fks.sizes(max_value=8), "N": fks.sizes(max_value=1)},
    reduction="N",
)
