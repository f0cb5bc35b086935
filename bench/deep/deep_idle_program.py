"""A persistent program with no tile: a persistent row scale (``out = x * scale[row]``) that
starts NUM_PROGRAMS programs for large inputs, each striding over the row tiles; a program
that gets no tile still runs the epilogue that flushes its running statistics, and writes it
over row 0 of the output.

The launcher picks the persistent kernel only for inputs of at least PERSISTENT_MIN (2048)
elements, with 16 programs over tiles of 8 rows: a program is left without a tile when there
are fewer than 16 row tiles, i.e. fewer than 121 rows, so the bug needs M * N >= 2048 with
M <= 120.

KNOWN MINIMAL CASE: M=32, N=64 (4 row tiles on 16 programs).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "depth": "persistent path (M*N >= 2048) and a program whose tile loop runs 0 times",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 32, "N": 64},
}

PERSISTENT_MIN = 2048
NUM_PROGRAMS = 16
ROWS = 8


@triton.jit
def _scale_persistent(x_ptr, s_ptr, out_ptr, M, N, NUM_PROGRAMS, ROWS: tl.constexpr,
                      BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(M, ROWS)
    seen = 0
    for tile in range(pid, n_tiles, NUM_PROGRAMS):
        rows = tile * ROWS + tl.arange(0, ROWS)
        for start in range(0, N, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            m = (rows[:, None] < M) & (cols[None, :] < N)
            x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=m, other=0.0)
            s = tl.load(s_ptr + rows, mask=rows < M, other=0.0)
            tl.store(out_ptr + rows[:, None] * N + cols[None, :], x * s[:, None], mask=m)
        seen += 1
    if seen == 0:  # BUG: an idle program "flushes" a zero tile over row 0
        cols = tl.arange(0, BLOCK_N)
        tl.store(out_ptr + cols, tl.zeros((BLOCK_N,), dtype=tl.float32), mask=cols < N)


@triton.jit
def _scale(x_ptr, s_ptr, out_ptr, M, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        tl.store(out_ptr + row * N + cols, x * tl.load(s_ptr + row), mask=cols < N)


def scale_rows(x, scale):
    M, N = x.shape
    out = torch.empty_like(x)
    if M * N >= PERSISTENT_MIN:
        # programs run in reverse order of pid on some GPUs; the interpreter runs 0 first, so
        # an idle program's flush lands after row 0 was written
        _scale_persistent[(NUM_PROGRAMS,)](x, scale, out, M, N, NUM_PROGRAMS, ROWS=ROWS,
                                           BLOCK_N=256)
    else:
        _scale[(M,)](x, scale, out, M, N, BLOCK_N=256)
    return out


target = fuzzkern.Target(
    name="deep.idle_program",
    launcher=scale_rows,
    reference=lambda x, scale: x * scale[:, None],
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float32"], layout=False),
        scale=fks.tensors(("M",), dtype_of="x", layout=False),
    ),
    dims={"M": fks.sizes(max_value=256), "N": fks.sizes(max_value=64)},
)
