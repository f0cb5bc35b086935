"""Two nested comparisons of a runtime scalar: a ring-buffer copy that reads ``x`` at an offset
``shift``; for far shifts (``shift > LIMIT``) it takes a wrap-around path, and that path
mishandles one phase of the shift within a tile (``shift % BLOCK == LIMIT % BLOCK + 3``),
adding a stale carry. Neither bound is a size edge nor a constant in the source (LIMIT is an
expression), so only one shift in 128 of the far ones shows the bug.

KNOWN MINIMAL CASE: N=1, shift=12296 (the first far shift of that phase).
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "depth": "shift > LIMIT (12293) and shift % 128 == 8: two comparisons of a scalar",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"N": 1},
}


@triton.jit
def _ring_copy(x_ptr, out_ptr, n, shift, LIMIT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if shift > LIMIT:  # far shifts wrap around the ring
        if shift % BLOCK == LIMIT % BLOCK + 3:
            x = x + 1.0  # BUG: a stale carry from the wrap
    tl.store(out_ptr + offs, x, mask=offs < n)


def ring_copy(x, shift):
    out = torch.empty_like(x)
    _ring_copy[(1,)](x, out, x.numel(), shift, LIMIT=3 * 4096 + 5, BLOCK=128)
    return out


target = fuzzkern.Target(
    name="deep.far_phase",
    launcher=ring_copy,
    reference=lambda x, shift: x.clone(),
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False),
                      shift=st.integers(0, 2**15)),
    dims={"N": fks.sizes(max_value=64)},
)
