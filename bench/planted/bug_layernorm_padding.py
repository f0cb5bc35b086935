"""LayerNorm forward whose variance counts the padding lanes.

One program normalizes one row in a single block of ``BLOCK_N = next_power_of_2(N)`` lanes.
Masked lanes load 0, which is harmless for the mean; but the kernel then squares ``x - mean``
on every lane, so each padding lane adds ``mean**2`` to the variance. The result is wrong
whenever N is not a power of two and a row's mean is not 0. This is Liger-Kernel's LayerNorm
bug (linkedin/Liger-Kernel#518, fixed in PR #519 with ``tl.where(mask, x - mean, 0.0)``), found
there only once someone added a hidden size of 1536.

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 3}`` (BLOCK_N=4, one padding lane); x, w, b
contiguous float16; seed 0's small ints (x = [4, -4, -2], mean -2/3). N=1 and N=2 are powers
of two and have no padding lane.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "reduction padding: LayerNorm variance over masked lanes",
    "peers": "bug class #1",
    "real_instance": "linkedin/Liger-Kernel#518 (PR #519)",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "N": 3},
    "minimal_case": "M=1, N=3; x, w, b contiguous float16; a row with a non-zero mean",
    "interpreter_visible": True,
}


@triton.jit
def _layer_norm_fwd(x_ptr, w_ptr, b_ptr, y_ptr, N, eps, stride_xm, stride_xn, stride_ym,
                    BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = x - mean
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

# LayerNorm weights and biases are O(1) parameters: finite, modest values.
PARAMS = fks.values(distributions=["small_ints", "normal", "uniform"], specials=False)

target = fuzzkern.Target(
    name="planted.layernorm_padding",
    launcher=layer_norm,
    reference=reference,
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float16", "bfloat16"], values=FINITE_RANGE),
        w=fks.tensors(("N",), dtype_of="x", values=PARAMS),
        b=fks.tensors(("N",), dtype_of="x", values=PARAMS),
    ),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=128)},
)
