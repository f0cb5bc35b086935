"""Per-row absolute maximum (an fp8 scaling factor) that silently drops NaN.

``amax = tl.max(tl.abs(x), axis=1)`` is the natural way to write it, but Triton's
``tl.max`` ignores NaN (it reduces with a NaN-dropping maximum, on the GPU and in the
interpreter alike), while ``torch.amax`` propagates it. A NaN in a row then yields a finite
scale, and the quantized tensor hides the NaN instead of carrying it forward. Triton documents
this as a known difference (triton PR #7349, #9022); kernels that must match torch check for
NaN explicitly. Rows are padded to at least 16 lanes with zeros, which cannot change an
absolute maximum.

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 1}``; x float32 with a NaN special. The padding lanes
are zeros, so even a one-element row has a number for ``tl.max`` to return instead of NaN.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "NaN policy: tl.max drops NaN, torch.amax propagates it",
    "peers": "bug class #9",
    "real_instance": "triton PR #7349 and #9022 (tl.max/tl.min ignore NaN)",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "N": 1},
    "minimal_case": "M=1, N=1; x float32 holding a NaN",
    "interpreter_visible": True,
}


@triton.jit
def _row_absmax_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask,
                other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(x), axis=1)
    tl.store(out_ptr + rows, amax, mask=rows < M)


def row_absmax(x):
    M, N = x.shape
    out = torch.empty((M,), dtype=torch.float32, device=x.device)
    BLOCK_M = 4
    _row_absmax_kernel[(triton.cdiv(M, BLOCK_M),)](
        x, out, M, N, x.stride(0), x.stride(1), BLOCK_M=BLOCK_M,
        BLOCK_N=max(16, triton.next_power_of_2(N)))
    return out


target = fuzzkern.Target(
    name="planted.amax_nan",
    launcher=row_absmax,
    reference=lambda x: x.abs().amax(dim=1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float32", "float16"])),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=128)},
)
