"""A matmul autotuned over two configs, one of which cannot run on any current GPU: its
tiles and pipeline stages need more shared memory than an H200 has (BLOCK 256x256x128 in
float32, 4 stages: about 2.6 MB against 228 KB). Upstream's autotuner skips that config while
it benchmarks; a case that forces it is not a finding."""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

CONFIGS = [triton.Config({"BM": 16, "BN": 16, "BK": 16}, num_stages=1),
           triton.Config({"BM": 256, "BN": 256, "BK": 128}, num_stages=4)]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def _mm(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        x = tl.load(a + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K),
                    other=0.0)
        y = tl.load(b + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _launch(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=torch.float32, device=a.device)
    _mm[lambda m: (triton.cdiv(M, m["BM"]), triton.cdiv(N, m["BN"]))](a, b, c, M, N, K)
    return c


mm_two_configs = fuzzkern.Target(
    launcher=_launch,
    reference=lambda a, b: a @ b,
    inputs=fks.inputs(a=fks.tensors(("M", "K"), dtypes=["float32"], layout=False),
                      b=fks.tensors(("K", "N"), dtypes=["float32"], layout=False)),
    dims={"M": fks.sizes(min_value=1, max_value=32), "N": fks.sizes(min_value=1, max_value=32),
          "K": fks.sizes(min_value=1, max_value=32)},
)
