"""Small bug: a distance loss whose bf16 terms ``tl.sum`` adds in bf16 (Liger's tvd).

``loss = sum_i 0.5 * |p_i - q_i|`` with ``p``, ``q`` bf16 probabilities and an fp32 loss.
Triton keeps a float ``tl.sum`` in its input's dtype, so every partial sum rounds to bf16's 8
bits: about 1e-3 relative at N = 4096, hundreds of float32 ulps of the loss. Compiled on a GPU
this was called a race or a compiler bug by elimination (the interpreter used to sum in
float32 and round once); its class is ``precision-bug`` in both modes: accumulate in float32
(``tl.sum(..., dtype=tl.float32)`` or ``.to(tl.float32)`` before it).

KNOWN MINIMAL CASE: N of a few hundred and more (enough terms for bf16 partial sums to round).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "bf16 partial sums of a loss reduction",
    "expected_verdicts": ["precision-bug"],
    "minimal_dims": {},
    "minimal_case": "N of a few hundred",
    "interpreter_visible": True,
}


@triton.jit
def _tvd(p_ptr, q_ptr, loss_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    p = tl.load(p_ptr + offs, mask=mask, other=0.0)
    q = tl.load(q_ptr + offs, mask=mask, other=0.0)
    tl.store(loss_ptr, tl.sum(0.5 * tl.abs(p - q), axis=0))  # BUG: sums in bf16


def tvd(p, q):
    p, q = p.contiguous(), q.contiguous()
    loss = torch.empty((1,), dtype=torch.float32, device=p.device)
    _tvd[(1,)](p, q, loss, p.numel(), BLOCK=triton.next_power_of_2(p.numel()))
    return loss


def reference(p, q):
    return (0.5 * (p.float() - q.float()).abs()).sum().reshape(1)


target = fuzzkern.Target(
    name="accuracy.bug_bf16_sum_loss",
    launcher=tvd,
    reference=reference,
    inputs=fks.inputs(p=fks.tensors(("N",), dtypes=["bfloat16"]),
                      q=fks.tensors(("N",), dtype_of="p")),
    dims={"N": fks.sizes(max_value=4096)},
)
