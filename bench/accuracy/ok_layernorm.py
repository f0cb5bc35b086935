"""Correct: LayerNorm forward in the Triton tutorial's style (05-layer-norm), any values.

One program per row; the row is walked in blocks of ``BLOCK_SIZE`` (mean, then variance of
the centred values with masked lanes zeroed, then normalize with ``w`` and ``b``), fp32
statistics, IEEE division for the mean (``div_rn``, see bench/planted/ok_layernorm.py). Every
value distribution for ``x``, ``w`` and ``b``: rows of small integers whose elements equal the
row mean, large weights (``large``: up to 1024) and ``wide`` magnitudes. fp32, fp16, bf16.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "LayerNorm fwd, blocked rows, fp32/fp16/bf16, every value distribution",
    "style": "Triton tutorial 05",
    "expected_verdicts": [],
}


@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, stride_xm, stride_xn, stride_ym, N, n_f, eps,
                          BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride_xm
    Y += row * stride_ym
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols * stride_xn, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.math.div_rn(tl.sum(_mean, axis=0), n_f)
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols * stride_xn, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.math.div_rn(tl.sum(_var, axis=0), n_f)
    rstd = 1 / tl.sqrt(var + eps)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask).to(tl.float32)
        b = tl.load(B + cols, mask=mask).to(tl.float32)
        x = tl.load(X + cols * stride_xn, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)


def layer_norm(x, weight, bias, eps=1e-5):
    M, N = x.shape
    weight, bias = weight.contiguous(), bias.contiguous()
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    BLOCK_SIZE = min(128, triton.next_power_of_2(N))
    _layer_norm_fwd_fused[(M,)](x, y, weight, bias, x.stride(0), x.stride(1), y.stride(0), N,
                                float(N), eps, BLOCK_SIZE=BLOCK_SIZE)
    return y


target = fuzzkern.Target(
    name="accuracy.ok_layernorm",
    launcher=layer_norm,
    reference=lambda x, weight, bias: torch.nn.functional.layer_norm(
        x, (x.shape[-1],), weight, bias, eps=1e-5),
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), expand=True),
        weight=fks.tensors(("N",), dtype_of="x"),
        bias=fks.tensors(("N",), dtype_of="x"),
    ),
    dims={"M": fks.sizes(max_value=8), "N": fks.sizes(max_value=512)},
)
