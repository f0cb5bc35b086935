"""Planted bugs that only the compiled kernel shows (the interpreter runs them correctly).

- ``uninit``: each program reads a workspace slot another program has not written yet (no
  synchronization between programs); the interpreter runs programs in order, so the slot is
  always written by then. fuzzkern poisons ``torch.empty`` memory, so the GPU reads NaN.
- ``lying_hint``: a strided copy that tells the compiler its offsets are contiguous
  (``tl.max_contiguous``) when the stride is not 1; the interpreter ignores hints.
- ``misaligned_hint``: a copy from a base pointer plus an element offset that it claims is a
  multiple of 16 (``tl.multiple_of``); a view starting at an odd element makes the vector
  loads fault with a misaligned address.
- ``illegal``: a copy with a wild unmasked store far past the end, to show a device fault does
  not stop the campaign.
- ``atomic_sum``: a float sum through ``tl.atomic_add`` from many programs: correct within
  tolerance, but not bitwise reproducible (``--repeat-compiled``: ``nondeterministic``).
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def _chained_blocks(x_ptr, ws_ptr, spin_ptr, out_ptr, n, BLOCK: tl.constexpr,
                    SPIN: tl.constexpr):
    # out[i] = x[i] + (sum of the previous block), the previous block's sum read from a
    # workspace its program publishes. BUG: no wait for the publisher. The interpreter runs
    # programs in order, so the value is always there; on the GPU they run concurrently, and
    # the lower program (made slower here, as a real producer often is) has not stored yet.
    pid = tl.program_id(0)
    npid = tl.num_programs(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    s = tl.sum(x, axis=0)
    busy = 0
    for _ in range(SPIN * (npid - pid)):
        busy += tl.load(spin_ptr, volatile=True)
    tl.store(ws_ptr + pid, s + (busy * 0).to(tl.float32))
    prev = tl.load(ws_ptr + pid - 1, mask=pid > 0, other=0.0)
    tl.store(out_ptr + offs, x + prev, mask=offs < n)


def chained_blocks(x, BLOCK):
    n = x.shape[0]
    nblocks = triton.cdiv(n, BLOCK)
    ws = torch.empty(nblocks, device=x.device, dtype=torch.float32)  # the uninitialized read
    spin = torch.zeros(1, device=x.device, dtype=torch.int32)
    out = torch.empty_like(x)
    _chained_blocks[(nblocks,)](x, ws, spin, out, n, BLOCK=BLOCK, SPIN=200)
    return out


def chained_reference(x, BLOCK):
    n = x.shape[0]
    sums = torch.stack([x[i:i + BLOCK].sum() for i in range(0, n, BLOCK)])
    prev = torch.cat([sums.new_zeros(1), sums[:-1]])
    return x + prev.repeat_interleave(BLOCK)[:n]


uninit = fuzzkern.Target(
    name="gpu.uninit",
    launcher=chained_blocks,
    reference=chained_reference,
    inputs=fks.inputs(
        x=fks.tensors(("N",), dtypes=["float32"], layout=False),
        BLOCK=st.sampled_from([16, 32]),
    ),
    dims={"N": fks.sizes(max_value=96)},
    reduction="N",
)


@triton.jit
def _hinted_copy(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    # Unmasked: the launcher only takes sizes that are a multiple of BLOCK.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    src = tl.max_contiguous(tl.multiple_of(offs * stride, BLOCK), BLOCK)  # BUG: a lie for stride>1
    tl.store(out_ptr + offs, tl.load(x_ptr + src))


def hinted_copy(x, BLOCK):
    n = x.shape[0]
    if n % BLOCK:
        raise ValueError(f"n={n} must be a multiple of BLOCK={BLOCK}")
    out = torch.empty(n, device=x.device, dtype=x.dtype)
    _hinted_copy[(n // BLOCK,)](x, out, x.stride(0), BLOCK=BLOCK)
    return out


lying_hint = fuzzkern.Target(
    name="gpu.lying_hint",
    launcher=hinted_copy,
    reference=lambda x: x,
    # Blocks this large make the compiler vectorize (4 fp32 per thread with 4 warps), which is
    # when it acts on the hint: PTX checked offline on Triton 3.6 for sm_90 (ld.global.v4.b32).
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]),
                      BLOCK=st.sampled_from([512, 1024])),
    dims={"N": st.sampled_from([512, 1024, 2048])},
    preconditions=(ValueError,),
)


@triton.jit
def _offset_copy(base_ptr, out_ptr, start, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    src = tl.multiple_of(start + offs, 16)  # BUG: a lie when the view starts at an odd element
    tl.store(out_ptr + offs, tl.load(base_ptr + src))


def offset_copy(x, BLOCK):
    n = x.shape[0]
    if n % BLOCK:
        raise ValueError(f"n={n} must be a multiple of BLOCK={BLOCK}")
    if x.stride(0) != 1:
        x = x.contiguous()
    # the kernel takes the storage's base pointer and the view's element offset
    base = x.as_strided((x.untyped_storage().nbytes() // x.element_size(),), (1,), 0)
    out = torch.empty(n, device=x.device, dtype=x.dtype)
    _offset_copy[(n // BLOCK,)](base, out, x.storage_offset(), BLOCK=BLOCK)
    return out


misaligned_hint = fuzzkern.Target(
    name="gpu.misaligned_hint",
    launcher=offset_copy,
    reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]),
                      BLOCK=st.sampled_from([512, 1024])),
    dims={"N": st.sampled_from([512, 1024, 2048])},
    preconditions=(ValueError,),
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


@triton.jit
def _atomic_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Each program adds its block's sum into one float with atomic_add: the order in which the
    # programs' adds land differs from run to run, and float addition is not associative.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))


def atomic_sum_launcher(x, BLOCK):
    x = x.contiguous()
    out = torch.zeros(1, device=x.device, dtype=torch.float32)
    _atomic_sum[(triton.cdiv(x.shape[0], BLOCK),)](x, out, x.shape[0], BLOCK=BLOCK)
    return out


atomic_sum = fuzzkern.Target(
    name="gpu.atomic_sum",
    launcher=atomic_sum_launcher,
    reference=lambda x: x.sum().reshape(1),
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False),
                      BLOCK=st.sampled_from([32, 64])),
    # many programs, so that many atomic adds race; sums of small integers are exact in any
    # order, so only non-integer values can differ
    dims={"N": st.sampled_from([1 << 16, 1 << 17])},
    reduction="N",
)
