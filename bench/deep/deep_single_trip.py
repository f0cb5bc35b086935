"""A loop trip count of exactly one: a GEMV (``out = A @ v``) whose K loop is software
pipelined, with the prefetch of the next chunk peeled off the last trip.

The loop runs ``cdiv(K, BLOCK_K) - 1`` times over prefetched chunks and the last chunk is added
after it. A kernel author special-cased the short K of a "one chunk in flight" loop: when the
loop runs exactly once, the epilogue is skipped (the author assumed the loop's own prefetch
covered it), so the last chunk is dropped. With K <= BLOCK_K the loop runs 0 times, with
K > 2 * BLOCK_K many: only ``BLOCK_K < K <= 2 * BLOCK_K`` shows the bug, and only with M at
least ``SPLIT_M`` (16) rows, where the pipelined kernel is chosen (the simple one below).

KNOWN MINIMAL CASE: M=16, K=17 (BLOCK_K=16: two chunks, one trip).
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "depth": "M >= 16 (pipelined kernel) and a K loop of exactly one trip",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 16, "K": 17},
}


@triton.jit
def _gemv(a_ptr, v_ptr, out_ptr, M, K, stride_am, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_K,), dtype=tl.float32)
    nxt = tl.load(a_ptr + row * stride_am + ks, mask=ks < K, other=0.0) * \
        tl.load(v_ptr + ks, mask=ks < K, other=0.0)
    n_chunks = tl.cdiv(K, BLOCK_K)
    trips = 0
    for c in range(1, n_chunks):
        acc += nxt
        cols = c * BLOCK_K + ks
        nxt = tl.load(a_ptr + row * stride_am + cols, mask=cols < K, other=0.0) * \
            tl.load(v_ptr + cols, mask=cols < K, other=0.0)
        trips += 1
    if M < 16:
        acc += nxt
    elif trips != 1:  # BUG: the last chunk is dropped when the loop ran exactly once
        acc += nxt
    tl.store(out_ptr + row, tl.sum(acc))


def gemv(a, v, BLOCK_K=16):
    M, K = a.shape
    out = torch.empty(M, dtype=torch.float32, device=a.device)
    _gemv[(M,)](a, v, out, M, K, a.stride(0), BLOCK_K=BLOCK_K)
    return out


target = fuzzkern.Target(
    name="deep.single_trip",
    launcher=gemv,
    reference=lambda a, v: (a @ v).float(),
    inputs=fks.inputs(
        a=fks.tensors(("M", "K"), dtypes=["float32"], layout=False),
        v=fks.tensors(("K",), dtype_of="a", layout=False),
        BLOCK_K=st.sampled_from([16, 32, 64]),
    ),
    dims={"M": fks.sizes(max_value=24), "K": fks.sizes(max_value=256)},
    reduction="K",
)
