"""Small bug: a GEMV over K = 4096 whose K mask drops the last term.

``y[m] = sum_k A[m, k] * x[k]`` in blocks of 512 with an fp32 accumulator, and the K mask
written ``offs_k < K - 1`` (meant: ``offs_k <= K - 1``). One term of 4096 is missing: under
``atol=rtol=1e-2`` (or the worst-case bound ``K * u * sum |a x|`` = 4.9e-4 * sum, about twice
a typical term here) it hides. The probabilistic bound ``4 * sqrt(K) * u * sum |a x|`` is
7.6e-6 * sum, about 0.03 of a typical term: a missing term of ordinary size is a kernel bug.
K is fixed at 4096 (that is the point); M and the values are fuzzed.

KNOWN MINIMAL CASE: M=1, K=4096; any values with A[0, 4095] * x[4095] not tiny.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "one missing term in a K=4096 dot product (mask offs_k < K - 1)",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "K": 4096},
    "minimal_case": "M=1, K=4096, any layout, A[0, 4095] * x[4095] not tiny",
    "interpreter_visible": True,
}

BLOCK_K = 512


@triton.jit
def gemv_kernel(a_ptr, x_ptr, y_ptr, K, stride_am, stride_ak, stride_x,
                BLOCK_K: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask = offs_k < K - 1  # BUG: drops k = K - 1
        a = tl.load(a_ptr + row * stride_am + offs_k * stride_ak, mask=mask, other=0.0)
        x = tl.load(x_ptr + offs_k * stride_x, mask=mask, other=0.0)
        acc += a.to(tl.float32) * x.to(tl.float32)
    tl.store(y_ptr + row, tl.sum(acc, axis=0).to(y_ptr.dtype.element_ty))


def gemv(a, x):
    M, K = a.shape
    y = torch.empty((M,), dtype=a.dtype, device=a.device)
    gemv_kernel[(M,)](a, x, y, K, a.stride(0), a.stride(1), x.stride(0), BLOCK_K=BLOCK_K)
    return y


target = fuzzkern.Target(
    name="accuracy.bug_dot_missing_term",
    launcher=gemv,
    reference=lambda a, x: a @ x,
    inputs=fks.inputs(
        a=fks.tensors(("M", "K"), dtypes=["float32"], expand=True),
        x=fks.tensors(("K",), dtype_of="a"),
    ),
    dims={"M": fks.sizes(max_value=4), "K": st.just(4096)},
)
