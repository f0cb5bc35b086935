"""Correct: attention ``softmax(Q K^T * scale) V`` in the Triton fused-attention style.

One program per block of 16 queries; keys and values are walked in blocks of 16 with the
online-softmax recurrence (running max ``m_i``, running sum ``l_i``, accumulator rescaled by
``exp(m_i - m_ij)``). As in the tutorial (and FlashAttention), the probabilities ``p`` are
rounded to the inputs' dtype before the second ``tl.dot``: a rounding a float64 reference
does not make. fp16/bf16 (fp32 with IEEE dots), head dim ``D`` <= 64, any layout of Q, K, V.
"""

import math

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "attention softmax(QK^T*scale)V, online softmax, p rounded to fp16/bf16",
    "style": "Triton tutorial 06 (fused attention) forward",
    "expected_verdicts": [],
}

BLOCK_M = 16
BLOCK_N = 16


@triton.jit
def _attn_fwd(Q, K, V, Out, sm_scale, M, N, D, stride_qm, stride_qd, stride_kn, stride_kd,
              stride_vn, stride_vd, stride_om, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              BLOCK_D: tl.constexpr, IEEE: tl.constexpr):
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    q = tl.load(Q + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd,
                mask=(offs_m[:, None] < M) & (offs_d[None, :] < D), other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    for start_n in range(0, N, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(K + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kd,
                    mask=(offs_n[None, :] < N) & (offs_d[:, None] < D), other=0.0)
        if IEEE:
            qk = tl.dot(q, k, input_precision="ieee")
        else:
            qk = tl.dot(q, k)
        qk = qk * sm_scale
        qk = tl.where(offs_n[None, :] < N, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(V + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                    mask=(offs_n[:, None] < N) & (offs_d[None, :] < D), other=0.0)
        p = p.to(v.dtype)
        if IEEE:
            acc = tl.dot(p, v, acc, input_precision="ieee")
        else:
            acc = tl.dot(p, v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + offs_m[:, None] * stride_om + offs_d[None, :], acc.to(Out.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_d[None, :] < D))


def attention(q, k, v):
    M, D = q.shape
    N = k.shape[0]
    out = torch.empty((M, D), dtype=q.dtype, device=q.device)
    sm_scale = 1.0 / math.sqrt(D)
    _attn_fwd[(triton.cdiv(M, BLOCK_M),)](
        q, k, v, out, sm_scale, M, N, D, q.stride(0), q.stride(1), k.stride(0), k.stride(1),
        v.stride(0), v.stride(1), out.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        BLOCK_D=max(16, triton.next_power_of_2(D)), IEEE=q.dtype == torch.float32)
    return out


def reference(q, k, v):
    scale = 1.0 / math.sqrt(q.shape[1])
    return torch.softmax((q @ k.T) * scale, dim=-1) @ v


target = fuzzkern.Target(
    name="accuracy.ok_attention",
    launcher=attention,
    reference=reference,
    inputs=fks.inputs(
        q=fks.tensors(("M", "D"), expand=True),
        k=fks.tensors(("N", "D"), dtype_of="q", expand=True),
        v=fks.tensors(("N", "D"), dtype_of="q", expand=True),
    ),
    dims={"M": fks.sizes(max_value=48), "N": fks.sizes(max_value=64),
          "D": fks.sizes(max_value=64)},
)
