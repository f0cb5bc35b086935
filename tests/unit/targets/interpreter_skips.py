"""Targets a run in interpreter mode cannot test: one declared compiled-only, one whose kernel
runs inline assembly on every launch. Both are skipped at once, each with one line."""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def _asm_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                  is_pure=True, pack=1)
    tl.store(y_ptr + offs, y, mask=offs < n)


def _launch(kernel):
    def launch(x):
        y = torch.empty_like(x)
        kernel[(1,)](x, y, x.numel(), BLOCK=triton.next_power_of_2(max(x.numel(), 1)))
        return y

    return launch


_INPUTS = fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]))

compiled_only = fuzzkern.Target(launcher=_launch(_copy), reference=lambda x: x,
                                inputs=_INPUTS, dims={"N": fks.sizes(max_value=16)},
                                modes=("compiled",))

inline_asm = fuzzkern.Target(launcher=_launch(_asm_copy), reference=lambda x: x,
                             inputs=_INPUTS, dims={"N": fks.sizes(max_value=16)})
