"""Correct: row log-sum-exp with ``-inf`` padding and torch's handling of infinite maxima.

The fixed form of ``bug_logsumexp_padding``: masked lanes load ``-inf`` (the neutral element
of max-and-exp), and a row maximum of ``±inf`` is replaced by 0 before the shift, as
``torch.logsumexp`` does, so rows holding ``inf`` give ``inf`` and all ``-inf`` rows give
``-inf`` instead of NaN. Any layout, values up to 2**20 in magnitude, special values.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "row logsumexp with -inf padding and infinite maxima handled, any layout",
    "expected_verdicts": [],
}


@triton.jit
def _logsumexp_kernel(x_ptr, out_ptr, N, stride_xm, stride_xn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < N,
                other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    m = tl.where(tl.abs(m) == float("inf"), 0.0, m)
    s = tl.sum(tl.exp(x - m), axis=0)
    tl.store(out_ptr + row, tl.log(s) + m)


def logsumexp(x):
    M, N = x.shape
    out = torch.empty((M,), dtype=torch.float32, device=x.device)
    _logsumexp_kernel[(M,)](x, out, N, x.stride(0), x.stride(1),
                            BLOCK_N=triton.next_power_of_2(N))
    return out


target = fuzzkern.Target(
    name="planted.ok_logsumexp",
    launcher=logsumexp,
    reference=lambda x: torch.logsumexp(x, dim=1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float32", "float16"], expand=True)),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=512)},
)
