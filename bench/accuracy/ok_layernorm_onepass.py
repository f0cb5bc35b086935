"""Correct: a textbook one-pass LayerNorm, fp32, whose reference computes in float32 itself.

One program per row holding the whole row: ``mean = tl.sum(x) / N``, the variance of the
centred row, ``(x - mean) * rstd * w + b``. The mean carries a float32 rounding of about
``1e-7`` of the row's magnitude; an element near the mean (``x - mean`` cancels) times a large
weight turns it into hundreds of float32 ulps at the output: the arithmetic of a correct
one-pass kernel. The reference is what users write, ``F.layer_norm(x.float(), ...)``: it
downcasts itself, so torch at the inputs' precision *is* the reference (rule 8's native term is
0), and perturbing the inputs cannot see the forward error of an intermediate reduction.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "one-pass LayerNorm fp32, reference F.layer_norm(x.float()), large weights",
    "style": "textbook / Triton tutorial 05, single block",
    "expected_verdicts": [],
}


@triton.jit
def _ln_kernel(X, Y, W, B, stride_xm, stride_xn, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride_xm + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask, other=0.0)
    b = tl.load(B + cols, mask=mask, other=0.0)
    y = xc * rstd * w + b
    tl.store(Y + row * N + cols, y, mask=mask)


def layer_norm(x, weight, bias):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _ln_kernel[(M,)](x, y, weight.contiguous(), bias.contiguous(), x.stride(0), x.stride(1), N,
                     1e-5, BLOCK=triton.next_power_of_2(N))
    return y


target = fuzzkern.Target(
    name="accuracy.ok_layernorm_onepass",
    launcher=layer_norm,
    reference=lambda x, weight, bias: torch.nn.functional.layer_norm(
        x.float(), (x.shape[-1],), weight.float(), bias.float(), eps=1e-5),
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float32"], expand=True),
        weight=fks.tensors(("N",), dtype_of="x"),
        bias=fks.tensors(("N",), dtype_of="x"),
    ),
    dims={"M": fks.sizes(max_value=4), "N": fks.sizes(max_value=256)},
)
