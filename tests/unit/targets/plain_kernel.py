"""A Triton kernel with its launcher and reference, importing neither fuzzkern nor anything
else of the test suite: what a user's own kernel module looks like. The standalone reproducer
test runs it with fuzzkern made unimportable."""

import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)  # BUG: ignores x's stride
    tl.store(out_ptr + offs, 3 * x, mask=mask)


def scale(x, BLOCK=16):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    return out


def scale_reference(x):
    return 3 * x
