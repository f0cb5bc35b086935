"""A compile-heavy target for compiling ahead (tests/gpu/test_ahead_gpu.py,
bench/compile_ahead.py): a row softmax autotuned over 24 configs (block x warps x stages),
as libraries autotune theirs; each case draws one config, so a search keeps needing new
specializations."""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w, num_stages=s)
           for b in (64, 128, 256) for w in (1, 2, 4, 8) for s in (1, 2)]


@triton.autotune(configs=CONFIGS, key=["n_cols"])
@triton.heuristics({"EVEN": lambda args: args["n_cols"] % args["BLOCK"] == 0})
@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr,
                    EVEN: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    peak = tl.full((BLOCK,), float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        if EVEN:
            x = tl.load(x_row + offs).to(tl.float32)
        else:
            x = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        peak = tl.maximum(peak, x)
    top = tl.max(peak, axis=0)
    total = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        total += tl.exp(x - top)
    denom = tl.sum(total, axis=0)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - top) / denom
        tl.store(out_row + offs, y.to(out_ptr.dtype.element_ty), mask=offs < n_cols)


def softmax(x):
    out = torch.empty_like(x)
    rows, cols = x.shape
    _softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0))
    return out


many_configs = fuzzkern.Target(
    launcher=softmax, reference=lambda x: torch.softmax(x, dim=-1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float32"], layout=False)),
    dims={"M": fks.sizes(min_value=1, max_value=8), "N": fks.sizes(min_value=1, max_value=700)},
)
