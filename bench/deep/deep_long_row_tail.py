"""Heuristic branch, then a rare tail: a row sum that switches to a chunked loop for long rows
and peels a lone trailing element of that loop off as a scalar.

Rows of at most ``LONG_ROW`` (3000) columns are summed in one 4096-wide block. Longer rows take
the chunked path (``if n_cols > LONG_ROW``), which sums full chunks of BLOCK columns and, when
exactly one column is left over (``n_cols % BLOCK == 1``), adds it with a scalar load: the bug
is in that peeled path, which loads column ``n_cols`` (one past the row) instead of
``n_cols - 1``. Reaching it takes a row longer than 3000 *and* a tail of one: a few in a
thousand uniform draws, and no size on fuzzkern's edge list above 1025 but 2049, 4097 (out of
range) and the primes.

KNOWN MINIMAL CASE: M=1, N=3073 (BLOCK=128: 24 chunks and one column).
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "depth": "heuristic branch (n_cols > 3000) and a tail of exactly one (n_cols % BLOCK == 1)",
    "expected_verdicts": ["oob-view", "oob", "kernel-bug"],
    "minimal_dims": {"M": 1, "N": 3073},
}

LONG_ROW = 3000


@triton.jit
def _row_sum(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride
    if n_cols > 3000:  # long rows: chunk by chunk
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        full = n_cols // BLOCK * BLOCK
        for start in range(0, full, BLOCK):
            acc += tl.load(base + start + tl.arange(0, BLOCK)).to(tl.float32)
        total = tl.sum(acc)
        rem = n_cols - full
        if rem == 1:  # a lone last column: one scalar load
            total += tl.load(base + n_cols).to(tl.float32)  # BUG: n_cols - 1
        elif rem > 0:
            cols = full + tl.arange(0, BLOCK)
            total += tl.sum(tl.load(base + cols, mask=cols < n_cols, other=0.0).to(tl.float32))
    else:
        cols = tl.arange(0, WIDE)
        total = tl.sum(tl.load(base + cols, mask=cols < n_cols, other=0.0).to(tl.float32))
    tl.store(out_ptr + row, total)


def row_sum(x, BLOCK=128):
    M, N = x.shape
    out = torch.empty(M, dtype=torch.float32, device=x.device)
    _row_sum[(M,)](x, out, N, x.stride(0), BLOCK=BLOCK, WIDE=4096)
    return out


target = fuzzkern.Target(
    name="deep.long_row_tail",
    launcher=row_sum,
    reference=lambda x: x.sum(dim=1).float(),
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float32"], layout=False),
        BLOCK=st.sampled_from([64, 128, 256]),
    ),
    dims={"M": fks.sizes(max_value=4), "N": fks.sizes(max_value=4096)},
    reduction="N",
)
