"""Correct: a blocked, online logsumexp over rows (FlagGems/Liger style), fp32 output.

The row is walked in blocks of 128 with a running maximum ``m`` and running sum ``d`` of
``exp(x - m)``, rescaled whenever the maximum grows (the online-softmax recurrence of
Liger's cross entropy); ``lse = m + log(d)``. Masked lanes load ``-inf``; a row whose maximum
is +inf returns it (NaN if the row holds a NaN), as torch does; the shift is kept finite for
the rescaling. Any layout, every value distribution; fp32 output whatever the input dtype.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "online blocked logsumexp, fp32 out, N <= 2048, any layout",
    "style": "FlagGems / Liger online softmax",
    "expected_verdicts": [],
}


@triton.jit
def logsumexp_kernel(x_ptr, out_ptr, n_cols, stride_m, stride_n, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    m = -float("inf")
    d = 0.0
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * stride_m + cols * stride_n, mask=cols < n_cols,
                    other=-float("inf")).to(tl.float32)
        block_max = tl.max(x, axis=0)
        m_new = tl.maximum(m, block_max)
        # keep the shift finite so that exp(x - shift) is 0 or 1, never NaN, on infinite rows
        shift = tl.where(m_new == float("inf"), 0.0, tl.where(m_new == -float("inf"), 0.0,
                                                                m_new))
        old = tl.where(m == -float("inf"), 0.0, tl.exp(m - shift))
        d = d * old + tl.sum(tl.exp(x - shift), axis=0)
        m = m_new
    shift = tl.where(m == float("inf"), 0.0, tl.where(m == -float("inf"), 0.0, m))
    lse = tl.where((m == float("inf")) & (d == d), m, shift + tl.log(d))  # d == d: not NaN
    tl.store(out_ptr + row, lse)


def logsumexp(x):
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
    logsumexp_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1), BLOCK_SIZE=128)
    return out


target = fuzzkern.Target(
    name="accuracy.ok_logsumexp",
    launcher=logsumexp,
    reference=lambda x: torch.logsumexp(x, dim=-1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), expand=True)),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=2048)},
)
