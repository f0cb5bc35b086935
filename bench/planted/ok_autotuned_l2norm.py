"""Correct: autotuned row-wise L2 normalization, several rows per program, both masks.

The fixed form of ``bug_autotune_rows``: the ``ROWS x BLOCK_N`` block is masked along rows
and columns, so every config is right for every number of rows. fuzzkern forces one config per
case (never benchmarking in the interpreter), so all three get exercised.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "autotuned kernel (3 configs), row-wise L2 normalize",
    "expected_verdicts": [],
}


@triton.autotune(
    configs=[
        triton.Config({"ROWS": 1}, num_warps=4),
        triton.Config({"ROWS": 2}, num_warps=4),
        triton.Config({"ROWS": 4}, num_warps=8),
    ],
    key=["N"],
)
@triton.jit
def _l2norm_kernel(x_ptr, y_ptr, M, N, eps, stride_xm, stride_xn, stride_ym,
                   ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask,
                other=0.0).to(tl.float32)
    norm = tl.sqrt(tl.sum(x * x, axis=1))
    # torch.nn.functional.normalize propagates NaN; tl.maximum drops it by default
    y = x / tl.maximum(norm, eps, propagate_nan=tl.PropagateNan.ALL)[:, None]
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], y.to(y_ptr.dtype.element_ty),
             mask=mask)


def l2_normalize(x, eps=1e-12):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)

    def grid(meta):
        return (triton.cdiv(M, meta["ROWS"]),)

    _l2norm_kernel[grid](x, y, M, N, eps, x.stride(0), x.stride(1), y.stride(0),
                         BLOCK_N=triton.next_power_of_2(N))
    return y


target = fuzzkern.Target(
    name="planted.ok_autotuned_l2norm",
    launcher=l2_normalize,
    reference=lambda x: torch.nn.functional.normalize(x, dim=1, eps=1e-12),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float16"], expand=True)),
    dims={"M": fks.sizes(max_value=32), "N": fks.sizes(max_value=128)},
)
