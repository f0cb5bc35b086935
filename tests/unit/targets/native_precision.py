"""Kernels for oracle rule 7 (tests/unit/test_oracle.py): an fp32 ratio whose intermediates
overflow in float32 but not in float64, computed as torch computes it, and a wrong variant."""

import torch
import triton
import triton.language as tl


@triton.jit
def _ratio(x_ptr, y_ptr, n, WRONG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    e = tl.exp(x * 0.5)
    y = e / e  # NaN where exp over- or underflows in float32, as torch's own float32 result
    if WRONG:
        y = y + 1.0
    tl.store(y_ptr + offs, y, mask=offs < n)


def ratio(x, wrong=False):
    y = torch.empty_like(x)
    _ratio[(1,)](x, y, x.numel(), WRONG=wrong, BLOCK=triton.next_power_of_2(x.numel()))
    return y


def reference(x, wrong=False):
    e = torch.exp(x * 0.5)
    return e / e
