"""A library that prunes its autotuner's configs in place on first use (some libraries keep only
the configs that fit the device): fuzzkern drew a config index from the full list, so forcing it
fails inside fuzzkern's own code. A fuzzkern limitation, not the kernel's bug
(tests/unit/test_confirm.py)."""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks


@triton.autotune([triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32}),
                  triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def copy(x):
    del _copy.configs[1:]  # "keep the configs that fit": the first one
    out = torch.empty_like(x)
    n = x.numel()
    _copy[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out


pruned = fuzzkern.Target(
    name="pruning_library.copy",
    launcher=copy,
    reference=lambda x: x.clone(),
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False)),
    dims={"N": fks.sizes(max_value=40)},
)
