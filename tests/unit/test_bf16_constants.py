"""A bf16 constant in a kernel under the interpreter (Triton 3.6's interpreter has no
``InterpreterBuilder.get_bf16``; ``tl.full(..., 1.5, tl.bfloat16)`` raised AttributeError, which
fuzzkern reported as the kernel's error once bf16 reached the interpreter as bf16)."""

import torch
import triton
import triton.language as tl

from fuzzkern.execution.interpreter.core import interpreter_mode


@triton.jit
def _at_least(x_ptr, out_ptr):
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.maximum(x, tl.full([4], 1.5, tl.bfloat16)))


def test_a_bf16_constant_runs_in_the_interpreter():
    x = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.bfloat16)
    out = torch.empty_like(x)
    with interpreter_mode():
        _at_least[(1,)](x, out)
    assert out.dtype == torch.bfloat16
    assert out.tolist() == [1.5, 1.5, 2.0, 3.0]
