"""Planted bug: one config of an autotuned kernel drops the tail mask (docs/architecture.md,
section 6, class #10; triton#9230, helion PR #655).

The kernel has an ``EVEN`` switch that skips masking when the block size divides N. Its
author set ``EVEN=True`` in the ``BLOCK=64`` config, assuming sizes are always multiples of
64; the fixed twin leaves it False. The autotuner would pick whichever config is fastest and
hide the bug on the shapes benchmarked; fuzzkern draws one config per case and forces it.

KNOWN MINIMAL CASE: dims ``{"N": 1}``; x, y contiguous float32; autotune config index 2
(``add_kernel.config[2]``: BLOCK=64, EVEN=True). Lanes 1..63 read and write out of bounds.
Configs 0 and 1 are correct, so the shrinker cannot lower the index.

EXPECTED VERDICT: ``oob``.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

EXPECTED_VERDICT = "oob"
MINIMAL_DIMS = {"N": 1}
MINIMAL_CASE = "N=1; x, y contiguous float32; add_kernel config[2] (BLOCK=64, EVEN=True)"
#: autotuned kernel name -> the config index of the minimal case
MINIMAL_CONFIGS = {"add_kernel": 2}


@triton.jit
def _add_body(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y,
              BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs * stride_x)
        y = tl.load(y_ptr + offs * stride_y)
        tl.store(out_ptr + offs, x + y)
    else:
        mask = offs < n
        x = tl.load(x_ptr + offs * stride_x, mask=mask)
        y = tl.load(y_ptr + offs * stride_y, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 16, "EVEN": False}, num_warps=1),
        triton.Config({"BLOCK": 32, "EVEN": False}, num_warps=1),
        triton.Config({"BLOCK": 64, "EVEN": True}, num_warps=2),  # BUG: EVEN only if 64 | n
    ],
    key=["n"],
)
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y,
               BLOCK: tl.constexpr, EVEN: tl.constexpr):
    _add_body(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y, BLOCK, EVEN)


def _fixed_kernel():
    # The fixed twin: the same configs, with EVEN=False in every one. It keeps the kernel's
    # name, as a fix made in place would, so a corpus entry that forces `add_kernel`'s config 2
    # replays against it.
    @triton.autotune(
        configs=[
            triton.Config({"BLOCK": 16, "EVEN": False}, num_warps=1),
            triton.Config({"BLOCK": 32, "EVEN": False}, num_warps=1),
            triton.Config({"BLOCK": 64, "EVEN": False}, num_warps=2),
        ],
        key=["n"],
    )
    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y,
                   BLOCK: tl.constexpr, EVEN: tl.constexpr):
        _add_body(x_ptr, y_ptr, out_ptr, n, stride_x, stride_y, BLOCK, EVEN)

    return add_kernel


add_kernel_fixed = _fixed_kernel()


def _launch(kernel, x, y):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()

    def grid(META):
        return (triton.cdiv(n, META["BLOCK"]),)

    kernel[grid](x, y, out, n, x.stride(0), y.stride(0))
    return out


def add_buggy(x, y):
    return _launch(add_kernel, x, y)


def add(x, y):
    return _launch(add_kernel_fixed, x, y)


def reference(x, y):
    return x + y


INPUTS = fks.inputs(
    x=fks.tensors(("N",), dtypes=["float32", "float16"]),
    y=fks.tensors(("N",), dtype_of="x"),
)
DIMS = {"N": fks.sizes(max_value=64)}

buggy = fuzzkern.Target(
    name="quality.autotune_config.buggy", launcher=add_buggy, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
correct = fuzzkern.Target(
    name="quality.autotune_config.correct", launcher=add, reference=reference,
    inputs=INPUTS, dims=DIMS,
)
