"""A deep bug for tests/unit/test_coverage.py: reached only through two nested comparisons of
a runtime scalar, the second one an equality no size edge or source constant gives away."""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def _offset_copy(x_ptr, out_ptr, n, shift, LIMIT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if shift > LIMIT:  # the "far" path
        if shift % BLOCK == LIMIT % BLOCK + 3:
            x = x + 1.0  # the planted bug
    tl.store(out_ptr + offs, x, mask=offs < n)


def offset_copy(x, shift):
    out = torch.empty_like(x)
    _offset_copy[(1,)](x, out, x.numel(), shift, LIMIT=3 * 4096 + 5, BLOCK=128)
    return out


target = fuzzkern.Target(
    name="coverage.deep_shift",
    launcher=offset_copy,
    reference=lambda x, shift: x.clone(),
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False),
                      shift=st.integers(0, 2**15)),
    dims={"N": fks.sizes(max_value=8)},
)
