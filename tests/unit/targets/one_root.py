"""A precision bug that shows in fp16 and in bf16 at one root line (tests/unit/test_findings.py):
Liger's tvd, whose ``tl.sum`` adds its terms in the inputs' dtype."""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def _tvd(P, Q, LOSS, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    p = tl.load(P + offs, mask=mask, other=0.0)
    q = tl.load(Q + offs, mask=mask, other=0.0)
    tl.store(LOSS, tl.sum(0.5 * tl.abs(p - q), axis=0))  # sums in the inputs' dtype


def tvd(p, q):
    loss = torch.empty(1, dtype=torch.float32, device=p.device)
    _tvd[(1,)](p, q, loss, p.numel(), BLOCK=triton.next_power_of_2(p.numel()))
    return loss


def reference(p, q):
    return (0.5 * (p.float() - q.float()).abs()).sum().reshape(1)


def _probabilities(**kw):
    return fks.tensors(("N",), layout=False, **kw, values=fks.values(
        distributions=["uniform"], specials=False, min_value=0.0, max_value=1.0))


tvd_both = fuzzkern.Target(
    name="tvd_both", launcher=tvd, reference=reference,
    inputs=fks.inputs(p=_probabilities(dtypes=["float16", "bfloat16"]),
                      q=_probabilities(dtype_of="p")),
    dims={"N": fks.sizes(min_value=1024, max_value=4096)})


def tvd_scaled(p, q):
    """A second op built on the same kernel (a library's variant): its sum is the same line."""
    return 2.0 * tvd(p, q)


tvd_twice = fuzzkern.Target(
    name="tvd_twice", launcher=tvd_scaled, reference=lambda p, q: 2.0 * reference(p, q),
    inputs=fks.inputs(p=_probabilities(dtypes=["float16"]), q=_probabilities(dtype_of="p")),
    dims={"N": fks.sizes(min_value=1024, max_value=4096)})
