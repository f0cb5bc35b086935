"""A kernel that never ends on the GPU: its one program waits for a flag nobody sets. The
compiled case's clock (fuzzkern.execution.pool.CaseClock) must still call it a ``hang`` at
about the timeout, whether its worker spins or sleeps while it waits on the device (the
worker's CPU time measures work only while the worker computes)."""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def _wait_for_flag(flag_ptr, out_ptr):
    v = tl.load(flag_ptr, volatile=True)
    while v == 0:
        v = tl.load(flag_ptr, volatile=True)
    tl.store(out_ptr, v)


def _waits_forever(x):
    flag = torch.zeros(1, dtype=torch.int32, device=x.device)
    out = torch.empty_like(flag)
    _wait_for_flag[(1,)](flag, out)
    return x + out.to(x.dtype)


waits_forever = fuzzkern.Target(
    launcher=_waits_forever, reference=lambda x: x + 1,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False)),
    dims={"N": fks.sizes(max_value=4)},
    modes=("compiled",), timeout=3.0,
)
