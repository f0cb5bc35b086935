"""Correct: attention forward that rounds ``q * scale`` and the probabilities to fp16 before
each ``tl.dot`` (a linear-attention / FlashAttention habit), fp32 accumulators.

``s = dot((q * scale).to(fp16), k^T)``, a softmax over the row in float32, then
``o = dot(p.to(fp16), v) / l``. The two roundings to fp16 are the library's design; where the
output is small next to its terms (values of mixed sign that cancel), they are tens of fp16
ulps of the result. The reference is the float64 formula.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "attention fwd, q*scale and p rounded to fp16 before the dots",
    "style": "flash-linear-attention / Triton tutorial 06",
    "expected_verdicts": [],
}


@triton.jit
def _attn(Q, K, V, Out, L, scale, D: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    d = tl.arange(0, D)
    n = tl.arange(0, BLOCK_N)
    mask = n < L
    q = tl.load(Q + row * D + d).to(tl.float32)
    q = (q * scale).to(tl.float16)
    k = tl.load(K + n[:, None] * D + d[None, :], mask=mask[:, None], other=0.0)
    v = tl.load(V + n[:, None] * D + d[None, :], mask=mask[:, None], other=0.0)
    s = tl.sum(q[None, :].to(tl.float32) * k.to(tl.float32), axis=1)
    s = tl.where(mask, s.to(tl.float16).to(tl.float32), float("-inf"))
    m = tl.max(s, axis=0)
    p = tl.exp(s - m)
    l_sum = tl.sum(p, axis=0)
    p16 = p.to(tl.float16).to(tl.float32)
    o = tl.sum(p16[:, None] * v.to(tl.float32), axis=0) / l_sum
    tl.store(Out + row * D + d, o.to(Out.dtype.element_ty))


def attention(q, k, v):
    M, D = q.shape
    L = k.shape[0]
    o = torch.empty((M, D), dtype=q.dtype, device=q.device)
    _attn[(M,)](q.contiguous(), k.contiguous(), v.contiguous(), o, L, D ** -0.5, D=D,
                BLOCK_N=triton.next_power_of_2(L))
    return o


def reference(q, k, v):
    s = (q @ k.T) * q.shape[-1] ** -0.5
    return torch.softmax(s, dim=-1) @ v


target = fuzzkern.Target(
    name="accuracy.ok_attention_fp16_scores",
    launcher=attention,
    reference=reference,
    inputs=fks.inputs(
        q=fks.tensors(("M", "D"), dtypes=["float16"]),
        k=fks.tensors(("L", "D"), dtype_of="q"),
        v=fks.tensors(("L", "D"), dtype_of="q"),
    ),
    dims={"M": fks.sizes(max_value=8), "L": fks.sizes(max_value=64),
          "D": st.sampled_from([16, 32])},
)
