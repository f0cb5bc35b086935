"""RMSNorm forward that loads the weight without the tail mask.

One program normalizes one row in a block of ``BLOCK_N = next_power_of_2(N)`` lanes. The row
of ``x`` is loaded under ``cols < N``, and so is the store; but the weight load was written
without a mask (the weight "is a parameter of exactly N elements"). Lanes ``N..BLOCK_N-1``
read past the end of ``w``. Their values only meet masked-off ``x`` lanes and are never
stored, so the output is right and a value check cannot see the bug; on a GPU the read faults
once ``w`` ends at a page boundary, and compute-sanitizer reports it. The same slip shows up in
norm kernels whose row is masked and whose per-column parameters are not.

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 3}`` (BLOCK_N=4: lane 3 reads ``w[3]``, one element
past the end); x, w contiguous float32. N=1 and N=2 are powers of two: no padding lane.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "tail mask: per-column parameter loaded without the row's mask",
    "peers": "bug class #2",
    "real_instance": "textbook unmasked tail load (bug class #2); seen on norm weights",
    "expected_verdicts": ["oob"],
    "minimal_dims": {"M": 1, "N": 3},
    "minimal_case": "M=1, N=3; x, w contiguous float32 (BLOCK_N=4)",
    "interpreter_visible": True,
}


@triton.jit
def _rms_norm_fwd(x_ptr, w_ptr, y_ptr, N, eps, stride_xm, stride_xn, stride_w, stride_ym,
                  BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
    ms = tl.sum(x * x, axis=0) / N
    rrms = 1.0 / tl.sqrt(ms + eps)
    w = tl.load(w_ptr + cols * stride_w).to(tl.float32)
    y = x * rrms * w
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm(x, w, eps=1e-6):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _rms_norm_fwd[(M,)](x, w, y, N, eps, x.stride(0), x.stride(1), w.stride(0), y.stride(0),
                        BLOCK_N=triton.next_power_of_2(N))
    return y


def reference(x, w):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + 1e-6) * w


# Finite-range inputs: a row holding values near the dtype's maximum overflows the float32
# statistics of any such kernel (torch's own included); that is the format, not the bug here.
FINITE_RANGE = fks.values(specials=["nan", "inf", "-inf", "-0.0", "subnormal", "tiny"])

PARAMS = fks.values(distributions=["small_ints", "normal", "uniform"], specials=False)

target = fuzzkern.Target(
    name="planted.rmsnorm_weight_mask",
    launcher=rms_norm,
    reference=reference,
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float32", "float16"], values=FINITE_RANGE),
        w=fks.tensors(("N",), dtype_of="x", values=PARAMS),
    ),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=128)},
)
