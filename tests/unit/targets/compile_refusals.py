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
