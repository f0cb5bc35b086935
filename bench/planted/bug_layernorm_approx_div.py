"""LayerNorm forward whose mean divides with Triton's ``/``: approximate on the GPU.

The kernel of ``ok_layernorm.py`` as first written (float32 statistics, padding lanes
excluded), with ``mean = tl.sum(x) / N``. On NVIDIA GPUs Triton lowers float32 ``/`` to
``div.full.f32`` (up to 2 ulp off, also where the exact quotient is representable:
triton#10661, triton#9262), so the mean of a constant row can differ from the row's value by an
ulp. LayerNorm then multiplies the centred values by ``rstd = 1/sqrt(var + eps)``, which for a
zero-variance row is ``1/sqrt(eps)`` = 316: the ulp becomes an error of about ``1e-4 * |w|``
where the exact answer is ``b`` (and grows with the row's magnitude). Constant rows are what
broadcast (expanded) inputs, padding rows and saturated activations give. The interpreter
divides exactly (numpy), so only the compiled kernel shows it: found by fuzzkern's compiled
mode in this kernel's first version on an H200 (2026-11-29).

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 3}``; x an expanded (stride-0) float16 row. N=1 and
N=2 divide exactly (a power of two).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "approximate float32 division (div.full.f32) amplified by 1/sqrt(eps) on "
                 "zero-variance rows",
    "peers": "bug class #8 (numerics); compiled-only divergence",
    "real_instance": "triton#10661 (x/y is div.full.f32); Triton's LayerNorm tutorial computes "
                     "the mean with /",
    "expected_verdicts": ["kernel-bug", "compiled-only"],
    "minimal_dims": {"M": 1, "N": 3},
    "minimal_case": "M=1, N=3; x an expanded float16 row (all elements equal)",
    "interpreter_visible": False,
}


@triton.jit
def _layer_norm_fwd(x_ptr, w_ptr, b_ptr, y_ptr, N, eps, stride_xm, stride_xn, stride_ym,
                    BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def layer_norm(x, w, b, eps=1e-5):
    M, N = x.shape
    w, b = w.contiguous(), b.contiguous()
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _layer_norm_fwd[(M,)](x, w, b, y, N, eps, x.stride(0), x.stride(1), y.stride(0),
                          BLOCK_N=triton.next_power_of_2(N))
    return y


def reference(x, w, b):
    return torch.nn.functional.layer_norm(x, (x.shape[1],), w, b, eps=1e-5)


# Finite-range inputs: a row holding values near the dtype's maximum overflows the float32
# statistics of any such kernel (torch's own included); that is the format, not the bug here.
FINITE_RANGE = fks.values(specials=["nan", "inf", "-inf", "-0.0", "subnormal", "tiny"])

PARAMS = fks.values(distributions=["small_ints", "normal", "uniform"], specials=False)

target = fuzzkern.Target(
    name="planted.layernorm_approx_div",
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
