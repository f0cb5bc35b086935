"""Autotuned kernels for compiling ahead (tests/unit/test_ahead.py, tests/gpu/test_ahead_gpu.py):
``double`` over four configs with a heuristic under its autotuner, as Liger and fla write
them; ``broken`` has a config that does not compile (a block of 3: ``tl.arange`` wants a
power of two)."""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

DOUBLE_CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w, num_stages=s)
                  for b, w, s in ((16, 1, 1), (32, 1, 2), (64, 2, 2), (128, 4, 3))]


@triton.autotune(configs=DOUBLE_CONFIGS, key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def _double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs))
    else:
        mask = offs < n
        tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=mask), mask=mask)


def double(x):
    out = torch.empty_like(x)
    n = x.numel()
    _double_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out


double_target = fuzzkern.Target(
    launcher=double, reference=lambda x: 2 * x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False)),
    dims={"N": fks.sizes(min_value=1, max_value=300)},
)


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 3})], key=[])
@triton.jit
def _broken_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def double_sum(x, y):
    return double(x + y)


double_any = fuzzkern.Target(
    launcher=double_sum, reference=lambda x, y: 2 * (x + y),
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32", "float16", "bfloat16"]),
                      y=fks.tensors(("N",), dtype_of="x")),
    dims={"N": fks.sizes(min_value=1, max_value=300)},
)
