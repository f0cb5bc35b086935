"""Small bug: a fp16 GEMV that accumulates in fp16 over a long reduction (K up to 4096).

``y[m] = sum_k A[m, k] * x[k]``: the accumulator is ``tl.zeros([BLOCK_K], dtype=A's dtype)``
(the author copied the load's dtype), so each of the 128 lanes adds ``K / 128`` products in
fp16, rounding to 11 bits each time, and the final ``tl.sum`` adds the lanes in fp16 too. A
correct kernel accumulates in fp32 (torch does on the CPU and the GPU). The error grows like
``sqrt(K) * 2**-11 * sum |a x|``, hundreds of fp16 ulps of a cancelling result at K = 4096:
beyond what a correct fp32-accumulating kernel can produce.

KNOWN MINIMAL CASE: M=1 with K in the thousands; exactly how small K may be depends on the
values (a sum whose partial sums exceed 2048 loses the integers' low bits).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "fp16 accumulation in a K <= 4096 reduction",
    "expected_verdicts": ["precision-bug", "kernel-bug"],
    "minimal_dims": {"M": 1},
    "minimal_case": "M=1, K large enough that fp16 partial sums lose bits",
    "interpreter_visible": True,
}

BLOCK_K = 128


@triton.jit
def gemv_kernel(a_ptr, x_ptr, y_ptr, K, stride_am, stride_ak, stride_x,
                BLOCK_K: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK_K], dtype=a_ptr.dtype.element_ty)  # BUG: fp16 accumulator
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask = offs_k < K
        a = tl.load(a_ptr + row * stride_am + offs_k * stride_ak, mask=mask, other=0.0)
        x = tl.load(x_ptr + offs_k * stride_x, mask=mask, other=0.0)
        acc += a * x
    tl.store(y_ptr + row, tl.sum(acc, axis=0).to(y_ptr.dtype.element_ty))


def gemv(a, x):
    M, K = a.shape
    y = torch.empty((M,), dtype=a.dtype, device=a.device)
    gemv_kernel[(M,)](a, x, y, K, a.stride(0), a.stride(1), x.stride(0), BLOCK_K=BLOCK_K)
    return y


target = fuzzkern.Target(
    name="accuracy.bug_fp16_accumulation",
    launcher=gemv,
    reference=lambda a, x: a @ x,
    inputs=fks.inputs(
        a=fks.tensors(("M", "K"), dtypes=["float16"], expand=True),
        x=fks.tensors(("K",), dtype_of="a"),
    ),
    dims={"M": fks.sizes(max_value=4), "K": fks.sizes(max_value=4096)},
)
