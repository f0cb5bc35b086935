"""Planted bugs that only the compiled kernel shows (the interpreter runs them correctly).

- ``uninit``: a split-K row sum that accumulates with atomics into ``torch.empty`` memory; the
  GPU's caching allocator hands back stale bytes, the interpreter's fresh CPU buffers do not.
- ``lying_hint``: a strided copy that tells the compiler its offsets are contiguous
  (``tl.max_contiguous``) when the stride is not 1; the interpreter ignores hints.
- ``illegal``: a copy with a wild unmasked store far past the end, to show a device fault does
  not stop the campaign.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def _split_k_rowsum(x_ptr, out_ptr, M, K, sxm, sxk, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    kb = tl.program_id(1)
    offs = kb * BLOCK_K + tl.arange(0, BLOCK_K)
    x = tl.load(x_ptr + row * sxm + offs * sxk, mask=offs < K, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(x, axis=0))


def split_k_rowsum(x, BLOCK_K):
    M, K = x.shape
    # stale memory on purpose: the GPU allocator returns a block we just filled with 7s
    if x.is_cuda:
        torch.full((M + 64,), 7.0, device=x.device, dtype=torch.float32)
    out = torch.empty(M, device=x.device, dtype=torch.float32)  # BUG: should be zeros
    if not x.is_cuda:
        out.zero_()  # on the CPU a fresh buffer is zero; model that deterministically
    grid = (M, triton.cdiv(K, BLOCK_K))
    _split_k_rowsum[grid](x, out, M, K, x.stride(0), x.stride(1), BLOCK_K=BLOCK_K)
    return out


uninit = fuzzkern.Target(
    name="gpu.uninit",
    launcher=split_k_rowsum,
    reference=lambda x: x.sum(1),
    inputs=fks.inputs(
        x=fks.tensors(("M", "K"), dtypes=["float32"]),
        BLOCK_K=st.sampled_from([16, 32]),
    ),
    dims={"M": fks.sizes(max_value=16), "K": fks.sizes(max_value=64)},
    reduction="K",
)


@triton.jit
def _hinted_copy(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    src = tl.max_contiguous(tl.multiple_of(offs * stride, BLOCK), BLOCK)  # BUG: a lie for stride>1
    x = tl.load(x_ptr + src, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)


def hinted_copy(x, BLOCK):
    n = x.shape[0]
    out = torch.empty(n, device=x.device, dtype=x.dtype)
    _hinted_copy[(triton.cdiv(n, BLOCK),)](x, out, n, x.stride(0), BLOCK=BLOCK)
    return out


lying_hint = fuzzkern.Target(
    name="gpu.lying_hint",
    launcher=hinted_copy,
    reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]), BLOCK=st.sampled_from([64, 128])),
    dims={"N": fks.sizes(min_value=64, max_value=512)},
)


@triton.jit
def _wild_store(x_ptr, out_ptr, n, FAR, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x, mask=offs < n)
    if n > 3:
        tl.store(out_ptr + FAR + offs, x)  # BUG: unmasked store far outside `out`


def wild_store(x, BLOCK):
    out = torch.empty_like(x)
    _wild_store[(1,)](x, out, x.shape[0], 1 << 36, BLOCK=BLOCK)
    return out


illegal = fuzzkern.Target(
    name="gpu.illegal",
    launcher=wild_store,
    reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False),
                      BLOCK=st.just(64)),
    dims={"N": fks.sizes(max_value=64)},
)
