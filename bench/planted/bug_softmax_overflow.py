"""Row softmax without the max subtraction: ``exp`` overflows for large logits.

A "simplified" softmax for attention scores: the author dropped the ``x - max(x)`` step
because the scores are "already scaled by 1/sqrt(d)" and small. ``exp`` in float32 overflows
to ``inf`` above about 88.7 and underflows to 0 below about -103, so any row holding a logit
that large gives ``inf / inf`` or ``0 / 0``: NaN where torch's softmax returns numbers.
Randn-filled tests never get near those values. Real instances of the class: softmax /
cross-entropy numerics with large logits (Liger cross-entropy with vocab > 250k, NVIDIA
Megatron-LM PR #2206 discussion), KernelBench #165 (softmax results that pass by accident).

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 1}``; x float32 with one element beyond the exp
range (the ``large`` distribution, magnitudes 256..1024, or a ``max``/``lowest`` special).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "exp overflow: softmax without max subtraction",
    "peers": "bug class #9 (NaN/inf semantics), #8 (numerics)",
    "real_instance": "KernelBench #165; Megatron-LM PR #2206 (cross-entropy numerics)",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "N": 1},
    "minimal_case": "M=1, N=1; x float32 with a value beyond exp's range (|x| > ~88)",
    "interpreter_visible": True,
}


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, N, stride_xm, stride_xn, stride_ym, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask,
                other=-float("inf")).to(tl.float32)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _softmax_kernel[(M,)](x, y, N, x.stride(0), x.stride(1), y.stride(0),
                          BLOCK_N=triton.next_power_of_2(N))
    return y


target = fuzzkern.Target(
    name="planted.softmax_overflow",
    launcher=softmax,
    reference=lambda x: torch.softmax(x, dim=1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float32", "float16"])),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=128)},
)
