"""Row softmax that steps from row to row by ``N`` instead of the row stride.

The kernel follows Triton's fused-softmax tutorial (one program per row, the whole row in one
block, max-subtracted), and its launcher makes rows unit-stride (``x.contiguous()`` when
``x.stride(1) != 1``). But the author computed the start of a row as ``row * n_cols``, which is
only right when rows are packed: a row slice of a wider buffer (``buf[:, :N]``, padded
rows), every other row (``x[::2]``) or a ``chunk`` along dim 0 all have ``stride(0) != N``.
Real instances: FlagGems/Torch-FL softmax and ``_weight_norm_interface`` (flagos-ai/Torch-FL
#171/#173), FlagGems sum/mean (PR #1786), pytorch#147828 (padded rows handed to a user kernel).

KNOWN MINIMAL CASE: dims ``{"M": 2, "N": 1}``; x float32 with ``stride(0) != 1`` and unit
column stride (a step along M, or padding before each row); row 1 reads storage element 1,
which is a gap of the view (``oob-view``) or another row's element (``kernel-bug``). With M=1
there is no second row.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "ignored stride: row stride assumed to be N",
    "peers": "bug class #3",
    "real_instance": "flagos-ai/Torch-FL #171/#173 (softmax); FlagGems PR #1786; pytorch#147828",
    "expected_verdicts": ["oob-view", "kernel-bug"],
    "minimal_dims": {"M": 2, "N": 1},
    "minimal_case": "M=2, N=1; x float32 with a row stride other than N (step along M)",
    "interpreter_visible": True,
}


@triton.jit
def _softmax_kernel(out_ptr, in_ptr, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_start = in_ptr + row * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(row_start + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    if x.stride(1) != 1:
        x = x.contiguous()
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _softmax_kernel[(M,)](y, x, y.stride(0), N, BLOCK=triton.next_power_of_2(N))
    return y


target = fuzzkern.Target(
    name="planted.softmax_row_stride",
    launcher=softmax,
    reference=lambda x: torch.softmax(x, dim=1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float32", "float16"])),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=128)},
)
