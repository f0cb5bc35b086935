"""Elementwise ``x * scale`` with a fast path for a row-broadcast ``scale`` that assumes unit
column stride.

``scale`` usually arrives as a broadcast view: a per-channel vector expanded over the rows
(``s.expand(M, N)``, strides ``(0, 1)``). The launcher spots that case (``stride(0) == 0``)
and takes a fast path that loads the scale row once per program and reuses it for a block of
rows. The fast path indexes the row as ``scale_ptr + cols``, assuming its elements are
adjacent. That holds for ``s.expand(M, N)`` but not for a scalar broadcast
(``torch.tensor(2.0).expand(M, N)``, strides ``(0, 0)``: a one-element storage) or a strided
vector expanded over rows (``w[::2].expand(M, N)``). Zero-stride operands take fast paths meant
for unit strides in real code: FlagGems ``scatter_add_`` with ``index.expand(rows, cols)``
(flagos-ai/FlagGems #6017, an out-of-bounds read).

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 2}``; x contiguous float32; scale expanded along both
dims (strides ``(0, 0)``, one element of storage). Lane 1 reads ``scale``'s storage at index 1,
past its end.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "expanded (stride-0) input takes a unit-stride fast path",
    "peers": "bug class #5",
    "real_instance": "flagos-ai/FlagGems #6017 (scatter_add_ with an expanded index)",
    "expected_verdicts": ["oob", "oob-view"],
    "minimal_dims": {"M": 1, "N": 2},
    "minimal_case": "M=1, N=2; x contiguous float32; scale expanded along both dims (stride 0, 0)",
    "interpreter_visible": True,
}

ROWS = 4
BLOCK_N = 64


@triton.jit
def _scale_rows_bcast(x_ptr, s_ptr, y_ptr, M, N, stride_xm, stride_xn, stride_ym,
                      ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    # scale is the same row for every row of x: load it once for a block of ROWS rows
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    s = tl.load(s_ptr + cols, mask=cols < N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask)
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], x * s[None, :], mask=mask)


@triton.jit
def _scale_general(x_ptr, s_ptr, y_ptr, M, N, stride_xm, stride_xn, stride_sm, stride_sn,
                   stride_ym, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask)
    s = tl.load(s_ptr + row * stride_sm + cols * stride_sn, mask=mask)
    tl.store(y_ptr + row * stride_ym + cols, x * s, mask=mask)


def scale_mul(x, scale):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if scale.stride(0) == 0:  # a row vector broadcast over the rows
        grid = (triton.cdiv(M, ROWS), triton.cdiv(N, BLOCK_N))
        _scale_rows_bcast[grid](x, scale, y, M, N, x.stride(0), x.stride(1), y.stride(0),
                                ROWS=ROWS, BLOCK_N=BLOCK_N)
    else:
        grid = (M, triton.cdiv(N, BLOCK_N))
        _scale_general[grid](x, scale, y, M, N, x.stride(0), x.stride(1), scale.stride(0),
                             scale.stride(1), y.stride(0), BLOCK_N=BLOCK_N)
    return y


target = fuzzkern.Target(
    name="planted.scale_broadcast",
    launcher=scale_mul,
    reference=lambda x, scale: x * scale,
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float32", "float16"]),
        scale=fks.tensors(("M", "N"), dtype_of="x", expand=True),
    ),
    dims={"M": fks.sizes(max_value=32), "N": fks.sizes(max_value=128)},
)
