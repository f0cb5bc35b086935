"""Persistent 2-D kernel that splits the tiles into equal chunks with floor division.

A persistent ``out = x + residual`` over (BLOCK_M, BLOCK_N) tiles: the launcher starts
``min(NUM_SMS, num_tiles)`` programs and each takes a contiguous run of tiles (the static
split stream-K style kernels use, which keeps a program's tiles adjacent in memory). The run
length is ``num_tiles // num_programs``; when the programs do not divide the tiles, the last
``num_tiles % num_programs`` tiles belong to no one and their part of ``out`` is never
written. Real instances of this class: wrong tile decompositions in persistent kernels
(Triton's persistent-matmul tutorial structure; triton#9230's configs writing disjoint halves).

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 33}``; x, residual contiguous float32; NUM_SMS=2.
With 16x16 tiles that is 3 tiles on 2 programs, one tile each: tile 2 (columns 32..) is never
written. Fewer than 3 tiles always divide evenly among min(NUM_SMS, tiles) programs.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "persistent tile decomposition: remainder tiles never processed",
    "peers": "bug class #10 (tile decomposition); tests/quality has the matmul variant",
    "real_instance": "triton#9230 (disjoint partial writes); persistent-matmul tile loops",
    "expected_verdicts": ["unwritten-output", "kernel-bug"],
    "minimal_dims": {"M": 1, "N": 33},
    "minimal_case": "M=1, N=33; x, residual contiguous float32; NUM_SMS=2 (3 tiles of 16x16)",
    "interpreter_visible": True,
}

BLOCK_M = 16
BLOCK_N = 16


@triton.jit
def _add_persistent(x_ptr, r_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_rm, stride_rn,
                    stride_om, NUM_PROGRAMS, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tl.cdiv(M, BLOCK_M) * num_pid_n
    tiles_per_program = num_tiles // NUM_PROGRAMS
    first = pid * tiles_per_program
    for tile in range(first, first + tiles_per_program):
        pid_m = tile // num_pid_n
        pid_n = tile % num_pid_n
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask)
        r = tl.load(r_ptr + rows[:, None] * stride_rm + cols[None, :] * stride_rn, mask=mask)
        tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :], x + r, mask=mask)


def add_persistent(x, residual, NUM_SMS=132):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    num_tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    programs = min(NUM_SMS, num_tiles)
    _add_persistent[(programs,)](x, residual, out, M, N, x.stride(0), x.stride(1),
                                 residual.stride(0), residual.stride(1), out.stride(0),
                                 programs, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out


target = fuzzkern.Target(
    name="planted.persistent_chunks",
    launcher=add_persistent,
    reference=lambda x, residual: x + residual,
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float32", "float16"]),
        residual=fks.tensors(("M", "N"), dtype_of="x"),
        # drawn rather than read from the device, so every mode runs the same grid
        NUM_SMS=st.sampled_from([1, 2, 3, 4, 8]),
    ),
    dims={"M": fks.sizes(max_value=64), "N": fks.sizes(max_value=64)},
)
