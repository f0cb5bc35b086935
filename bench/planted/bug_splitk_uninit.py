"""Split-K matmul that accumulates its partial products into ``torch.empty`` memory.

For a skinny output with a long K, each (M, N) tile's K range is split across ``SPLIT_K``
programs, which add their fp32 partial sums into the output with ``tl.atomic_add``. That
requires a zeroed output; the launcher allocates it with ``torch.empty`` (a leftover from the
non-split version, which stores instead of adding). Whatever the allocator hands back is added
to the result: zeros on a fresh page, so tests on a fresh process often pass; garbage after
the allocator has been reused. Real instances: split-K accumulation bugs such as ROCm/aiter
PR #5428 (racy split-K partials); uninitialized ``empty`` outputs (FlagGems PR #4831).

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 1, "K": 1}``; a, b contiguous float16; SPLIT_K=1:
every case fails, since fuzzkern poisons ``torch.empty`` memory.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "split-K partials added into uninitialized (torch.empty) output",
    "peers": "bug class #14 (split-K), #4 (uninitialized output)",
    "real_instance": "ROCm/aiter PR #5428 (split-K partials); FlagGems PR #4831 (empty output)",
    "expected_verdicts": ["kernel-bug", "unwritten-output"],
    "minimal_dims": {"M": 1, "N": 1, "K": 1},
    "minimal_case": "M=N=K=1; a, b contiguous float16; SPLIT_K=1",
    "interpreter_visible": True,
    "baseline": {"scalars": {"SPLIT_K": 2}},
}

BLOCK_M = BLOCK_N = BLOCK_K = 32


@triton.jit
def _matmul_splitk(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                   stride_cm, stride_cn, SPLIT_K: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(pid_k * BLOCK_K, K, SPLIT_K * BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.atomic_add(c, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul_splitk(a, b, SPLIT_K=2):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=torch.float32, device=a.device)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N), SPLIT_K)
    _matmul_splitk[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                         c.stride(0), c.stride(1), SPLIT_K=SPLIT_K, BLOCK_M=BLOCK_M,
                         BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return c


target = fuzzkern.Target(
    name="planted.splitk_uninit",
    launcher=matmul_splitk,
    reference=lambda a, b: a @ b,
    inputs=fks.inputs(
        a=fks.tensors(("M", "K"), dtypes=["float16"]),
        b=fks.tensors(("K", "N"), dtype_of="a"),
        SPLIT_K=st.sampled_from([1, 2, 4]),
    ),
    dims={"M": fks.sizes(max_value=48), "N": fks.sizes(max_value=48),
          "K": fks.sizes(max_value=256)},
    reduction="K",
)
