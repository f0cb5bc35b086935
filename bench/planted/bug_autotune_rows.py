"""Autotuned row-wise L2 normalization whose multi-row configs drop the row mask.

For short rows the kernel normalizes several rows per program (a ``ROWS x BLOCK_N`` block).
The author wrote it with ``ROWS=1`` and masked columns only; later a tuning pass added
``ROWS=2`` and ``ROWS=4`` configs, assuming the number of rows is a multiple of 4 (it is for
the model's batch x sequence). When it is not, the last program reads and writes rows past
the end. The autotuner picks whichever config is fastest for the shapes it sees, so a test may
or may not run a bad config; a test in Triton's interpreter runs the first one. Real
instances: configs that behave differently (triton#9230, triton#6524, helion PR #655).

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 1}``; x contiguous float16; autotune config 1
(``ROWS=2``): row 1 does not exist. Config 0 (``ROWS=1``) is correct.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "config-dependent: multi-row autotune configs miss the row mask",
    "peers": "bug class #10",
    "real_instance": "triton#9230, triton#6524, helion PR #655 (config-dependent bugs)",
    "expected_verdicts": ["oob"],
    "minimal_dims": {"M": 1, "N": 1},
    "minimal_case": "M=1, N=1; x contiguous float16; _l2norm_kernel config[1] (ROWS=2)",
    "minimal_configs": {"_l2norm_kernel": 1},
    "interpreter_visible": True,
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
    mask = cols[None, :] < N
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
    name="planted.autotune_rows",
    launcher=l2_normalize,
    reference=lambda x: torch.nn.functional.normalize(x, dim=1, eps=1e-12),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float16"])),
    dims={"M": fks.sizes(max_value=32), "N": fks.sizes(max_value=128)},
)
