"""A kernel a library cached from a compiled run, launched again inside the interpreter in the
same process (FlagGems' ``@libentry`` keeps the ``CompiledKernel`` and launches it directly):
it runs interpreted on the CPU tensors, not on the GPU. Before, compiled runs of FlagGems left
every later interpreted run of the same worker (the float64 shadow, the explanation's
interpreted re-run) failing with "Pointer argument cannot be accessed from Triton (cpu
tensor?)".

Marked ``gpu``: skipped without CUDA.
"""

import pytest
import torch
import triton
import triton.language as tl

from fuzzkern.execution.interpreter.core import interpreter_mode

pytestmark = pytest.mark.gpu


@triton.jit
def _scaled(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)


def test_a_cached_compiled_kernel_runs_interpreted_inside_the_interpreter():
    x = torch.arange(8, dtype=torch.float32, device="cuda")
    out = torch.empty_like(x)
    cached = _scaled[(1,)](x, out, 8, SCALE=3.0, BLOCK=8)  # what @libentry keeps
    assert out.tolist() == [3.0 * i for i in range(8)]
    xc = torch.arange(8, dtype=torch.float32)
    outc = torch.zeros(8)
    with interpreter_mode():
        cached[(1, 1, 1)](xc, outc, 8, 3.0, 8)  # every parameter, as Triton 3.6 launches it
    assert outc.tolist() == [3.0 * i for i in range(8)]
