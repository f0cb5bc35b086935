"""Correct: LayerNorm forward (fp16/bf16 in, float32 statistics), padding lanes excluded.

One row per program in a block of ``next_power_of_2(N)`` lanes; the centred values are zeroed
on padding lanes before the variance (``tl.where(mask, x - mean, 0.0)``, the fix of
linkedin/Liger-Kernel#519). Any layout of ``x``; ``w`` and ``b`` are O(1) parameters.

The mean and the variance divide with ``tl.math.div_rn`` (IEEE round-to-nearest): Triton's
``/`` on float32 is ``div.full.f32`` on NVIDIA GPUs (up to 2 ulp, triton#10661), so the mean
of a constant row can miss the row's value by an ulp, and ``rstd = 1/sqrt(var + eps)`` (up to
``1/sqrt(eps)`` = 316 for a zero-variance row) blows that ulp up into a visible error where
the exact answer is ``b``. fuzzkern's compiled mode found that in this kernel's first version
(2026-11-29, H200); ``bug_layernorm_approx_div.py`` keeps that version as a planted bug.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "LayerNorm forward, fp16/bf16, N <= 256, any layout",
    "expected_verdicts": [],
}


@triton.jit
def _layer_norm_fwd(x_ptr, w_ptr, b_ptr, y_ptr, N, n_f, eps, stride_xm, stride_xn, stride_ym,
                    BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
    mean = tl.math.div_rn(tl.sum(x, axis=0), n_f)
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.math.div_rn(tl.sum(xc * xc, axis=0), n_f)
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def layer_norm(x, w, b, eps=1e-5):
    M, N = x.shape
    w, b = w.contiguous(), b.contiguous()
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _layer_norm_fwd[(M,)](x, w, b, y, N, float(N), eps, x.stride(0), x.stride(1), y.stride(0),
                          BLOCK_N=triton.next_power_of_2(N))
    return y


def reference(x, w, b):
    return torch.nn.functional.layer_norm(x, (x.shape[1],), w, b, eps=1e-5)


# Finite-range inputs: a row holding values near the dtype's maximum overflows the float32
# statistics of any such kernel (torch's own included); that is the format, not the bug here.
FINITE_RANGE = fks.values(specials=["nan", "inf", "-inf", "-0.0", "subnormal", "tiny"])

PARAMS = fks.values(distributions=["small_ints", "normal", "uniform"], specials=False)

target = fuzzkern.Target(
    name="planted.ok_layernorm",
    launcher=layer_norm,
    reference=reference,
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float16", "bfloat16"], expand=True,
                      values=FINITE_RANGE),
        w=fks.tensors(("N",), dtype_of="x", values=PARAMS),
        b=fks.tensors(("N",), dtype_of="x", values=PARAMS),
    ),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=256)},
)
