"""A target whose kernel the compiler refuses for some cases: a matmul over a head dimension
``D`` padded to a power of 2, fed to ``tl.dot``, which compiled needs K >= 16 for fp16 inputs.
The interpreter runs any K; fuzzkern must report what the GPU would (``compile-error``)."""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def _head_dot(q_ptr, k_ptr, out_ptr, D, BD: tl.constexpr):
    r = tl.arange(0, 16)
    d = tl.arange(0, BD)
    q = tl.load(q_ptr + r[:, None] * D + d[None, :], mask=d[None, :] < D, other=0.0)
    k = tl.load(k_ptr + r[:, None] * D + d[None, :], mask=d[None, :] < D, other=0.0)
    s = tl.dot(q, tl.trans(k))
    tl.store(out_ptr + r[:, None] * 16 + r[None, :], s)


def _scores(q, k):
    out = torch.empty((16, 16), dtype=torch.float32, device=q.device)
    D = q.shape[1]
    _head_dot[(1,)](q, k, out, D, BD=triton.next_power_of_2(D))
    return out


head_scores = fuzzkern.Target(
    launcher=_scores,
    reference=lambda q, k: q.float() @ k.float().T,
    inputs=fks.inputs(q=fks.tensors((16, "D"), dtypes=["float16"], layout=False),
                      k=fks.tensors((16, "D"), dtypes=["float16"], layout=False)),
    dims={"D": fks.sizes(min_value=1, max_value=64)},
)


@triton.jit
def _fp8_row_sums(x_ptr, out_ptr, N, BN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BN)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0).to(tl.float32))  # summed in fp8: no backend can


def _row_sums(x):
    out = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    _fp8_row_sums[(x.shape[0],)](x, out, x.shape[1], BN=triton.next_power_of_2(x.shape[1]))
    return out


#: a dequantizing reduction that forgot to widen first: ``tl.sum`` of fp8 values compiles to
#: an fp8 add, which no backend lowers; the interpreter alone would sum and pass
fp8_row_sums = fuzzkern.Target(
    launcher=_row_sums,
    reference=lambda x: x.float().sum(1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float8_e4m3fn"], layout=False)),
    dims={"M": fks.sizes(min_value=1, max_value=4), "N": fks.sizes(min_value=1, max_value=64)},
)
