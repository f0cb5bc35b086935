"""Small bug: LayerNorm with ``eps = 1e-6`` hard-coded where the model says 1e-5.

Otherwise the correct kernel of ``ok_layernorm.py``'s family (fp32 statistics, padding lanes
zeroed, IEEE division). ``rstd = 1/sqrt(var + eps)`` differs by ``4.5e-6 / var`` relative:
invisible under ``rtol=1e-2`` for ordinary rows, and visible when the row's variance is small
(values of 2**-10 or less: the ``wide`` distribution, subnormal/tiny specials), where the
output is off by up to ``sqrt(10) = 3.2x``. A real instance: HuggingFace models whose fused
norm kernels ignored ``config.layer_norm_eps`` (e.g. 1e-6 vs 1e-5 in ViT/T5 ports).

KNOWN MINIMAL CASE: M=1, N=2 with a small-variance row (|x0 - x1| below ~2**-8).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "eps 1e-6 instead of 1e-5 in LayerNorm",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "N": 2},
    "minimal_case": "M=1, N=2, a row of variance well below 1e-5",
    "interpreter_visible": True,
}


@triton.jit
def _layer_norm_fwd(x_ptr, w_ptr, b_ptr, y_ptr, N, n_f, stride_xm, stride_xn, stride_ym,
                    BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
    mean = tl.math.div_rn(tl.sum(x, axis=0), n_f)
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.math.div_rn(tl.sum(xc * xc, axis=0), n_f)
    rstd = 1.0 / tl.sqrt(var + 1e-6)  # BUG: the model's eps is 1e-5
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def layer_norm(x, w, b):
    M, N = x.shape
    w, b = w.contiguous(), b.contiguous()
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _layer_norm_fwd[(M,)](x, w, b, y, N, float(N), x.stride(0), x.stride(1), y.stride(0),
                          BLOCK_N=triton.next_power_of_2(N))
    return y


target = fuzzkern.Target(
    name="accuracy.bug_layernorm_eps",
    launcher=layer_norm,
    reference=lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[1],), w, b, eps=1e-5),
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), expand=True),
        w=fks.tensors(("N",), dtype_of="x"),
        b=fks.tensors(("N",), dtype_of="x"),
    ),
    dims={"M": fks.sizes(max_value=8), "N": fks.sizes(max_value=256)},
)
